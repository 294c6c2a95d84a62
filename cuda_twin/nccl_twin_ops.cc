// The device side of the NCCL twin's operations (see nccl_twin_ops.h).
#include "cuda_twin/nccl_twin_ops.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "engine/common/dtype.h"

namespace orca::cuda_twin {
namespace {

template <typename T>
T Apply(ncclRedOp_t op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap around, as the GPU does, without UB
    if (op == ncclSum) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if (op == ncclProd)
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    if (op == ncclSum) return a + b;
    if (op == ncclProd) return a * b;
  }
  return op == ncclMax ? std::max(a, b) : std::min(a, b);
}

// out[i] = inputs[0][i] (op) inputs[1][i] (op) ..., left to right.
template <typename T>
void ReduceNative(ncclRedOp_t op, size_t count, const std::vector<const void*>& inputs, void* out) {
  T* o = static_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) {
    T acc = static_cast<const T*>(inputs[0])[i];
    for (size_t r = 1; r < inputs.size(); ++r)
      acc = Apply(op, acc, static_cast<const T*>(inputs[r])[i]);
    o[i] = acc;
  }
}

// 16-bit floats: each step in F32, rounded back to the type, as NCCL's kernels do.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void ReduceHalf(ncclRedOp_t op, size_t count, const std::vector<const void*>& inputs, void* out) {
  uint16_t* o = static_cast<uint16_t*>(out);
  for (size_t i = 0; i < count; ++i) {
    uint16_t acc = static_cast<const uint16_t*>(inputs[0])[i];
    for (size_t r = 1; r < inputs.size(); ++r) {
      acc = Store(Apply(op, Load(acc), Load(static_cast<const uint16_t*>(inputs[r])[i])));
    }
    o[i] = acc;
  }
}

void Reduce(ncclDataType_t t, ncclRedOp_t op, size_t count, const std::vector<const void*>& inputs,
            void* out) {
  switch (t) {
    case ncclInt8:
      return ReduceNative<int8_t>(op, count, inputs, out);
    case ncclUint8:
      return ReduceNative<uint8_t>(op, count, inputs, out);
    case ncclInt32:
      return ReduceNative<int32_t>(op, count, inputs, out);
    case ncclUint32:
      return ReduceNative<uint32_t>(op, count, inputs, out);
    case ncclInt64:
      return ReduceNative<int64_t>(op, count, inputs, out);
    case ncclUint64:
      return ReduceNative<uint64_t>(op, count, inputs, out);
    case ncclFloat16:
      return ReduceHalf<F16ToF32, F32ToF16>(op, count, inputs, out);
    case ncclFloat32:
      return ReduceNative<float>(op, count, inputs, out);
    case ncclFloat64:
      return ReduceNative<double>(op, count, inputs, out);
    case ncclBfloat16:
      return ReduceHalf<Bf16ToF32, F32ToBf16>(op, count, inputs, out);
    default:
      return;  // rejected by the API
  }
}

MessageKind KindOf(OpKind k) {
  switch (k) {
    case OpKind::kAllReduce:
      return MessageKind::kAllReduce;
    case OpKind::kBroadcast:
      return MessageKind::kBroadcast;
    default:
      return MessageKind::kP2p;
  }
}

MessageHeader HeaderOf(const CommOp& op) {
  MessageHeader h;
  h.kind = KindOf(op.kind);
  h.count = op.count;
  h.datatype = op.datatype;
  h.op = op.kind == OpKind::kAllReduce ? op.op : 0;
  h.root = op.kind == OpKind::kBroadcast ? op.peer : 0;
  return h;
}

// Why `got` does not belong to `want`; empty when it does.
std::string Mismatch(const MessageHeader& got, const CommOp& want) {
  const MessageHeader w = HeaderOf(want);
  if (got.count != w.count || got.datatype != w.datatype || got.op != w.op || got.root != w.root) {
    return absl::StrCat("count ", got.count, " type ", got.datatype, " op ", got.op, " root ",
                        got.root, " where this rank has count ", w.count, " type ", w.datatype,
                        " op ", w.op, " root ", w.root);
  }
  return "";
}

// One message a launch expects.
struct Expected {
  size_t op;
  MessageKind kind;
  bool matched = false;
};

}  // namespace

size_t DataTypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

bool IsSupportedRedOp(ncclRedOp_t op) {
  return op == ncclSum || op == ncclProd || op == ncclMax || op == ncclMin;
}

cudaError_t RunLaunch(PeerMesh& mesh, const std::vector<CommOp>& ops) {
  const int me = mesh.rank(), n = mesh.nranks();
  // Collectives of zero elements are no-ops, as in NCCL; Send/Recv still match up.
  const auto active = [](const CommOp& op) {
    return op.count > 0 || op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  };

  // 1. Send. AllReduce keeps its own contribution as sent: a later op of the launch may
  // write into this op's send buffer before the reduction runs.
  std::vector<std::vector<char>> own(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const CommOp& op = ops[i];
    if (!active(op)) continue;
    const size_t bytes = op.count * DataTypeSize(op.datatype);
    std::vector<int> to;
    if (op.kind == OpKind::kAllReduce) {
      own[i].assign(static_cast<const char*>(op.send), static_cast<const char*>(op.send) + bytes);
      for (int p = 0; p < n; ++p) {
        if (p != me) to.push_back(p);
      }
    } else if (op.kind == OpKind::kBroadcast && op.peer == me) {
      for (int p = 0; p < n; ++p) {
        if (p != me) to.push_back(p);
      }
    } else if (op.kind == OpKind::kSend) {
      to.push_back(op.peer);
    }
    const void* data = op.kind == OpKind::kAllReduce ? own[i].data() : op.send;
    for (int p : to) {
      if (mesh.Send(p, HeaderOf(op), data, bytes) != PeerMesh::Result::kOk) {
        return cudaErrorLaunchFailure;
      }
    }
  }

  // 2. Receive what each peer owes this launch.
  std::vector<std::vector<Expected>> expected(static_cast<size_t>(n));
  for (size_t i = 0; i < ops.size(); ++i) {
    const CommOp& op = ops[i];
    if (!active(op)) continue;
    if (op.kind == OpKind::kAllReduce) {
      for (int p = 0; p < n; ++p) {
        if (p != me) expected[static_cast<size_t>(p)].push_back({i, MessageKind::kAllReduce});
      }
    } else if (op.kind == OpKind::kBroadcast && op.peer != me) {
      expected[static_cast<size_t>(op.peer)].push_back({i, MessageKind::kBroadcast});
    } else if (op.kind == OpKind::kRecv) {
      expected[static_cast<size_t>(op.peer)].push_back({i, MessageKind::kP2p});
    }
  }
  // got[op][peer]: the message from `peer` for op `op`.
  std::vector<std::vector<Message>> got(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) got[i].resize(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    std::vector<Expected>& want = expected[static_cast<size_t>(p)];
    for (size_t left = want.size(); left > 0; --left) {
      Message m;
      if (mesh.Receive(p, &m) != PeerMesh::Result::kOk) return cudaErrorLaunchFailure;
      auto slot = std::find_if(want.begin(), want.end(), [&](const Expected& e) {
        return !e.matched && e.kind == m.header.kind;
      });
      std::string why;
      if (slot == want.end()) {
        const auto next =
            std::find_if(want.begin(), want.end(), [](const Expected& e) { return !e.matched; });
        why = absl::StrCat("rank ", p, " sent ", KindName(m.header.kind),
                           " data while this rank expected ", KindName(next->kind), " from it");
      } else {
        why = Mismatch(m.header, ops[slot->op]);
        if (!why.empty()) why = absl::StrCat(KindName(m.header.kind), " from rank ", p, ": ", why);
      }
      if (!why.empty()) {
        mesh.FailUsage(why);
        return cudaErrorLaunchFailure;
      }
      slot->matched = true;
      got[slot->op][static_cast<size_t>(p)] = std::move(m);
    }
  }

  // 3. Complete, in call order.
  for (size_t i = 0; i < ops.size(); ++i) {
    const CommOp& op = ops[i];
    if (!active(op)) continue;
    const size_t bytes = op.count * DataTypeSize(op.datatype);
    switch (op.kind) {
      case OpKind::kAllReduce: {
        std::vector<const void*> inputs(static_cast<size_t>(n));
        for (int p = 0; p < n; ++p) {
          inputs[static_cast<size_t>(p)] =
              p == me ? own[i].data() : got[i][static_cast<size_t>(p)].payload.data();
        }
        Reduce(op.datatype, op.op, op.count, inputs, op.recv);
        break;
      }
      case OpKind::kBroadcast:
        if (op.peer != me) {
          std::memcpy(op.recv, got[i][static_cast<size_t>(op.peer)].payload.data(), bytes);
        } else if (op.recv != op.send) {
          std::memmove(op.recv, op.send, bytes);
        }
        break;
      case OpKind::kRecv:
        if (bytes > 0)
          std::memcpy(op.recv, got[i][static_cast<size_t>(op.peer)].payload.data(), bytes);
        break;
      case OpKind::kSend:
        break;
    }
  }
  return cudaSuccess;
}

}  // namespace orca::cuda_twin
