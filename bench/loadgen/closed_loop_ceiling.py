#!/usr/bin/env python3
"""The most requests per second a machine could serve a closed-loop run's trace, and the
fraction of it each run reached (issue 18's acceptance, docs/benchmarks.md section 12).

The model: every prompt token costs its GEMM FLOPs (2 x the non-LM-head GEMM parameters)
plus causal attention (2 x 2 x layers x hidden x n^2 / 2 over a prompt of n tokens) at
the GEMM rate, and the LM head once per request; every later output token costs a decode
iteration's bandwidth floor (GEMM weights plus the batch's KV cache, streamed once at the
read bandwidth) divided by the batch. Prompt lengths come from the trace's range (the
run records the total, and U[a, b] gives E[n^2]); the rate, bandwidth and decode floor
from `orca bench engine` (its `roofline` and the decode point at the batch asked).

  closed_loop_ceiling.py SERVE.json [SERVE.json ...] --engine ENGINE.json --batch 16 \
      [--gemm-gflops 400 --weight-bytes 2 --label-match bfloat16]
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('serve', nargs='+', help='orca bench serve result files (closed loop)')
    ap.add_argument('--engine', required=True, help='orca bench engine result file (its roofline and decode floors)')
    ap.add_argument('--batch', type=int, default=16, help='decode batch whose floor prices an output token')
    ap.add_argument('--gemm-gflops', type=float, default=0, help='GEMM rate (default: the engine file\'s sgemm rate)')
    ap.add_argument('--weight-bytes', type=float, default=0, help='bytes per GEMM weight (default: the engine file\'s)')
    ap.add_argument('--label-match', default='', help='only runs whose label contains this')
    ap.add_argument('--label-skip', default='', help='skip runs whose label contains this')
    args = ap.parse_args()

    engine = json.load(open(args.engine))
    model, roof = engine['model'], engine['roofline']
    point = next(p for p in engine['points'] if p['batch'] == args.batch)
    gemm_params = model['gemm_parameters']
    head_params = model['hidden_size'] * model['vocab_size']
    body_params = gemm_params - head_params
    gflops = args.gemm_gflops or roof['sgemm_gflops']
    engine_weight_bytes = gemm_params * 4 if engine['options']['dtype'] in ('auto', 'float32') else None
    # The decode floor: the engine's, with the GEMM weights' bytes rescaled when asked.
    floor_ms = point['floor_decode_bandwidth_ms']
    if args.weight_bytes and engine_weight_bytes:
        floor_ms -= (engine_weight_bytes - gemm_params * args.weight_bytes) / (roof['read_gbs'] * 1e9) * 1e3
    per_output_token_s = floor_ms / 1e3 / args.batch

    print(f"machine: GEMM {gflops:.0f} GFLOP/s, read {roof['read_gbs']:.1f} GB/s; decode floor at batch "
          f"{args.batch}: {floor_ms:.2f} ms ({per_output_token_s * 1e3:.3f} ms per output token)")
    for path in args.serve:
        for run in json.load(open(path))['runs']:
            label = run['label']
            if args.label_match not in label or (args.label_skip and args.label_skip in label):
                continue
            res, trace = run['results'], run['config']['trace']
            n = res['requests']['succeeded']
            lo, hi = trace['input_len_range']
            mean_sq = (hi ** 3 - (lo - 1) ** 3) / (3 * (hi - lo + 1))  # E[n^2] of U[lo, hi], near enough
            attention = 2 * 2 * model['num_layers'] * model['hidden_size'] * mean_sq / 2 * n
            prefill_s = (2 * body_params * res['input_tokens'] + 2 * head_params * n + attention) / (gflops * 1e9)
            decode_s = (res['output_tokens'] - n) * per_output_token_s
            ceiling = n / (prefill_s + decode_s)
            got = res['request_throughput']
            print(f"{label:40s} seed {trace['seed']}: prefill floor {prefill_s:5.1f} s + decode {decode_s:4.1f} s "
                  f"-> ceiling {ceiling:.2f} req/s; measured {got:.3f} ({100 * got / ceiling:.0f} %)")


if __name__ == '__main__':
    main()
