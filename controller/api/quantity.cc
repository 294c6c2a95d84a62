#include "controller/api/quantity.h"

#include <iterator>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace orca::controller {
namespace {

using Uint128 = unsigned __int128;

// How kube-apiserver writes a quantity back: the format of its suffix at parse time.
enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

// A parsed quantity: (negative ? -1 : 1) * mantissa * 10^scale.
struct Decimal {
  bool negative = false;
  Uint128 mantissa = 0;
  int scale = 0;
  Format format = Format::kDecimalSI;
};

constexpr Uint128 kMax = ~Uint128{0};

bool MulSmall(Uint128& x, uint64_t factor) {
  if (x != 0 && x > kMax / factor) return false;
  x *= factor;
  return true;
}

std::string ToString(Uint128 x) {
  if (x == 0) return "0";
  std::string out;
  while (x != 0) {
    out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(x % 10)));
    x /= 10;
  }
  return out;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

absl::Status Invalid(const std::string& text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", text, "\": ", why));
}

// Reads the suffix: decimal SI ("", n..E), binary SI (Ki..Ei) or a decimal exponent
// ("e3", "E-9"), as resource.ParseQuantity's suffixer does.
absl::Status ReadSuffix(const std::string& text, absl::string_view suffix, int& exp10, int& exp2,
                        Format& format) {
  static constexpr std::pair<absl::string_view, int> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<absl::string_view, int> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [s, e] : kDecimal) {
    if (suffix == s) {
      exp10 = e;
      format = Format::kDecimalSI;
      return absl::OkStatus();
    }
  }
  for (const auto& [s, e] : kBinary) {
    if (suffix == s) {
      exp2 = e;
      format = Format::kBinarySI;
      return absl::OkStatus();
    }
  }
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    absl::string_view rest = suffix.substr(1);
    bool negative = false;
    if (rest[0] == '+' || rest[0] == '-') {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty() || rest.size() > 4) return Invalid(text, "bad exponent");
    int e = 0;
    for (char c : rest) {
      if (!IsDigit(c)) return Invalid(text, "bad exponent");
      e = e * 10 + (c - '0');
    }
    exp10 = negative ? -e : e;
    format = Format::kDecimalExponent;
    return absl::OkStatus();
  }
  return Invalid(text, "unknown suffix");
}

// Returns whether |d| > limit.
bool GreaterThan(const Decimal& d, Uint128 limit) {
  Uint128 m = d.mantissa;
  for (int s = d.scale; s > 0; --s) {
    if (!MulSmall(m, 10)) return true;
  }
  Uint128 bound = limit;
  for (int s = d.scale; s < 0; ++s) {
    if (!MulSmall(bound, 10)) return false;
  }
  return m > bound;
}

absl::StatusOr<Decimal> Parse(const std::string& text) {
  Decimal d;
  size_t pos = 0;
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    d.negative = text[pos] == '-';
    ++pos;
  }
  std::string digits;
  size_t start = pos;
  while (pos < text.size() && IsDigit(text[pos])) digits += text[pos++];
  int fraction = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && IsDigit(text[pos])) {
      digits += text[pos++];
      ++fraction;
    }
  }
  if (digits.empty() || pos == start) return Invalid(text, "no number");
  int exp10 = 0;
  int exp2 = 0;
  if (absl::Status s = ReadSuffix(text, absl::string_view(text).substr(pos), exp10, exp2, d.format);
      !s.ok()) {
    return s;
  }
  size_t first = digits.find_first_not_of('0');
  digits = first == std::string::npos ? "" : digits.substr(first);
  for (char c : digits) {
    if (!MulSmall(d.mantissa, 10) || d.mantissa > kMax - (c - '0')) {
      return Invalid(text, "too many digits");
    }
    d.mantissa += c - '0';
  }
  d.scale = exp10 - fraction;
  for (int i = 0; i < exp2; ++i) {
    if (!MulSmall(d.mantissa, 2)) return Invalid(text, "too large");
  }
  // ParseQuantity keeps nano precision and rounds finer values up (away from zero).
  while (d.scale < -9) {
    bool remainder = d.mantissa % 10 != 0;
    d.mantissa = d.mantissa / 10 + (remainder ? 1 : 0);
    ++d.scale;
  }
  // ParseQuantity caps binary quantities at the largest int64.
  constexpr Uint128 kMaxInt64 = 9223372036854775807u;
  if (d.format == Format::kBinarySI && GreaterThan(d, kMaxInt64)) {
    d.mantissa = kMaxInt64;
    d.scale = 0;
  }
  return d;
}

// Returns mantissa * 10^scale as an integer when it is one.
bool AsInteger(const Decimal& d, Uint128& out) {
  Uint128 m = d.mantissa;
  int s = d.scale;
  for (; s < 0; ++s) {
    if (m % 10 != 0) return false;
    m /= 10;
  }
  for (; s > 0; --s) {
    if (!MulSmall(m, 10)) return false;
  }
  out = m;
  return true;
}

std::string DecimalString(Decimal d) {
  if (d.mantissa == 0) return "0";
  while (d.mantissa % 10 == 0) {
    d.mantissa /= 10;
    ++d.scale;
  }
  // Canonical exponents are multiples of three.
  switch (d.scale % 3) {
    case 1:
    case -2:
      MulSmall(d.mantissa, 10);
      d.scale -= 1;
      break;
    case 2:
    case -1:
      MulSmall(d.mantissa, 100);
      d.scale -= 2;
      break;
  }
  std::string suffix;
  if (d.format == Format::kDecimalExponent) {
    if (d.scale != 0) suffix = absl::StrCat("e", d.scale);
  } else {
    switch (d.scale) {
      case -9:
        suffix = "n";
        break;
      case -6:
        suffix = "u";
        break;
      case -3:
        suffix = "m";
        break;
      case 0:
        break;
      case 3:
        suffix = "k";
        break;
      case 6:
        suffix = "M";
        break;
      case 9:
        suffix = "G";
        break;
      case 12:
        suffix = "T";
        break;
      case 15:
        suffix = "P";
        break;
      case 18:
        suffix = "E";
        break;
      default:
        suffix = absl::StrCat("e", d.scale);
    }
  }
  return absl::StrCat(d.negative ? "-" : "", ToString(d.mantissa), suffix);
}

}  // namespace

absl::StatusOr<std::string> CanonicalQuantity(const std::string& text) {
  absl::StatusOr<Decimal> parsed = Parse(text);
  if (!parsed.ok()) return parsed.status();
  Decimal d = *parsed;
  if (d.format == Format::kBinarySI) {
    // Binary suffixes only for integers of at least 1Ki (Quantity.CanonicalizeBytes).
    Uint128 bytes = 0;
    if (!AsInteger(d, bytes) || bytes < 1024) {
      d.format = Format::kDecimalSI;
      return DecimalString(d);
    }
    static constexpr absl::string_view kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    size_t k = 0;
    while (bytes % 1024 == 0 && k + 1 < std::size(kSuffixes)) {
      bytes /= 1024;
      ++k;
    }
    return absl::StrCat(d.negative ? "-" : "", ToString(bytes), kSuffixes[k]);
  }
  return DecimalString(d);
}

absl::StatusOr<std::string> CanonicalQuantity(const nlohmann::json& value) {
  if (value.is_number_integer()) return CanonicalQuantity(std::to_string(value.get<int64_t>()));
  if (value.is_string()) return CanonicalQuantity(value.get<std::string>());
  return absl::InvalidArgumentError(
      absl::StrCat("quantity ", value.dump(), ": must be an integer or a quantity string"));
}

}  // namespace orca::controller
