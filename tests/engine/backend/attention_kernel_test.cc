// AttendOneHead against a double-precision causal softmax attention: head sizes that are
// and are not multiples of 8 and 32, decode (one query) and prefill chunks, short and
// long histories, and scores spread far enough apart that most exponentials underflow.
#include "engine/backend/cpu/attention_kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace orca {
namespace {

TEST(AttentionKernelTest, MatchesADoubleReference) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int d : {8, 12, 64, 72, 128}) {
    for (int q_len : {1, 5, 40}) {
      for (int kv_len : {q_len, q_len + 37, q_len + 300}) {
        for (float scale : {0.125f, 30.0f}) {
          const int64_t ldq = d * 3 + 1, ldo = d + 4;
          std::vector<float> q(q_len * ldq), cache(2 * kv_len * (d + 3));
          for (float& v : q) v = u(rng);
          for (float& v : cache) v = u(rng);
          // Keys and values scattered through one buffer, as blocks of the paged cache are.
          std::vector<const float*> krow(kv_len), vrow(kv_len);
          std::vector<int> order(2 * kv_len);
          for (int i = 0; i < 2 * kv_len; ++i) order[i] = i;
          std::shuffle(order.begin(), order.end(), rng);
          for (int j = 0; j < kv_len; ++j) {
            krow[j] = cache.data() + order[2 * j] * (d + 3);
            vrow[j] = cache.data() + order[2 * j + 1] * (d + 3);
          }
          std::vector<float> scores(kv_len), out(q_len * ldo, 777.0f);
          AttendOneHead(d, q_len, kv_len, q.data(), ldq, krow.data(), vrow.data(), scale,
                        scores.data(), out.data(), ldo);
          for (int i = 0; i < q_len; ++i) {
            const int n = kv_len - q_len + i + 1;
            std::vector<double> s(n);
            double mx = -1e300, sum = 0;
            for (int j = 0; j < n; ++j) {
              double dot = 0;
              for (int c = 0; c < d; ++c) dot += double{q[i * ldq + c]} * krow[j][c];
              s[j] = dot * scale;
              mx = std::max(mx, s[j]);
            }
            for (int j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - mx));
            for (int c = 0; c < d; ++c) {
              double ref = 0;
              for (int j = 0; j < n; ++j) ref += s[j] / sum * vrow[j][c];
              // Large scores carry float rounding of ~1e-7 x |score| into the weights.
              ASSERT_NEAR(out[i * ldo + c], ref, scale > 1 ? 2e-4 : 2e-5)
                  << "d=" << d << " q_len=" << q_len << " kv_len=" << kv_len << " scale=" << scale
                  << " row " << i << " col " << c;
            }
            for (int c = d; c < ldo; ++c) ASSERT_EQ(out[i * ldo + c], 777.0f) << "wrote past d";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace orca
