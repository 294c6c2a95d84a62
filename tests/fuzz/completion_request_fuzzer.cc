// Fuzzes the bodies of POST /v1/completions, /tokenize and /detokenize
// (engine/server/openai_request.h): every body goes through all three parsers.
//
// The contract checked besides "no crash, no hang": a refused body is InvalidArgument,
// and a request the parser accepts passes ValidateOpenAiRequest, as every transport
// relies on.

#include <cstddef>
#include <cstdint>

#include "engine/server/openai_request.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

void CheckRefusal(const absl::Status& status) {
  if (!status.ok() && status.code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body = orca::fuzz::AsString(data, size);
  auto request = orca::ParseOpenAiRequest(body, /*chat=*/false);
  CheckRefusal(request.status());
  if (request.ok() && !orca::ValidateOpenAiRequest(*request).ok()) __builtin_trap();
  CheckRefusal(orca::ParseTokenizeRequest(body).status());
  std::string model;
  CheckRefusal(orca::ParseDetokenizeRequest(body, &model).status());
  return 0;
}
