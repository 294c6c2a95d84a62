#!/usr/bin/env python3
# Copies kernels/ to DST for the host emulation: .cu files become .cc files whose
# `Kernel<<<grid, block, smem, stream>>>(args)` launches are rewritten to
# `emu::Launch(grid, block, [=] { Kernel(args); })`, and dynamic shared memory becomes a
# pointer to the emulator's buffer. Usage: transform.py KERNELS_DIR DST_DIR
import re, sys, os, glob
src = sys.argv[1]
dst = sys.argv[2]
os.makedirs(os.path.join(dst, 'internal'), exist_ok=True)
def transform(s):
    s = s.replace('extern __shared__ float4 smem4[];', 'float4* smem4 = (float4*)emu::g_dyn_smem;')
    s = s.replace('extern __shared__ float cos_sin[];', 'float* cos_sin = (float*)emu::g_dyn_smem;')
    out = []
    i = 0
    while True:
        j = s.find('<<<', i)
        if j < 0:
            out.append(s[i:]); break
        # kernel name: walk back over identifier and optional template args
        k = j
        while s[k-1].isspace(): k -= 1
        if s[k-1] == '>':
            depth = 0
            while True:
                k -= 1
                if s[k] == '>': depth += 1
                elif s[k] == '<':
                    depth -= 1
                    if depth == 0: break
        while k > 0 and (s[k-1].isalnum() or s[k-1] in '_:'):
            k -= 1
        name = s[k:j]
        e = s.find('>>>', j)
        cfg = []; depth = 0; cur = ''
        for ch in s[j+3:e]:
            if ch in '([': depth += 1
            if ch in ')]': depth -= 1
            if ch == ',' and depth == 0:
                cfg.append(cur.strip()); cur = ''
            else:
                cur += ch
        cfg.append(cur.strip())
        # args
        a0 = s.find('(', e)
        depth = 0; m = a0
        while True:
            if s[m] == '(': depth += 1
            elif s[m] == ')':
                depth -= 1
                if depth == 0: break
            m += 1
        args = s[a0+1:m]
        out.append(s[i:k])
        out.append('emu::Launch(dim3(%s), dim3(%s), [=] { %s(%s); })' % (cfg[0], cfg[1], name, args))
        i = m + 1
    return ''.join(out)
for f in glob.glob(src + '/*.cu') + glob.glob(src + '/*.cuh') + glob.glob(src + '/*.h') + glob.glob(src + '/internal/*'):
    rel = os.path.relpath(f, src)
    s = open(f).read()
    if f.endswith('.cu'):
        s = transform(s)
        rel = rel[:-3] + '.cc'
    open(os.path.join(dst, rel), 'w').write(s)
