#!/usr/bin/env python3
"""Translates one CUDA source (.cu) into host C++ for the CUDA twin (cuda_twin/README.md).

Only the two constructs C++ cannot express change; everything else compiles as written,
with cuda_twin/device_env.h force-included:
  kernel<<<grid, block[, smem[, stream]]>>>(args)
      -> ::orca::cuda_twin::LaunchKernel("kernel", grid, block, smem, stream,
                                         [=] { kernel(args); })
  __shared__ T name[N]...;     -> auto& name = ::orca::cuda_twin::StaticShared<T[N]...>([] {});
  extern __shared__ T name[];  -> T* name = static_cast<T*>(::orca::cuda_twin::DynamicShared());
Line numbers are kept (a #line directive and the same number of newlines), so compiler
errors and sanitizer reports point into the .cu file. Anything it cannot parse is an
error naming the file and line: the build stops rather than run a mistranslation.

Usage: cu_to_cc.py INPUT.cu OUTPUT.cc [NAME]   (NAME: the path #line gives, e.g. relative
to the repository, so that the output does not depend on the checkout's location)
"""
import os
import re
import sys

IDENT = r'[A-Za-z_][A-Za-z0-9_]*'
TYPE = r'[A-Za-z_][A-Za-z0-9_:<>, ]*?[A-Za-z0-9_>]'
DYNAMIC = re.compile(r'extern\s+__shared__\s+(?P<type>' + TYPE + r')\s+(?P<name>' + IDENT +
                     r')\s*\[\s*\]\s*;')
STATIC = re.compile(r'__shared__\s+(?P<type>' + TYPE + r')\s+(?P<name>' + IDENT +
                    r')\s*(?P<dims>(\[[^\]]+\]\s*)*);')


class TranslationError(Exception):
    pass


def line_of(text, pos):
    return text.count('\n', 0, pos) + 1


def keep_lines(original, replacement):
    """Pads `replacement` with the newlines `original` had, keeping line numbers."""
    return replacement + '\n' * (original.count('\n') - replacement.count('\n'))


def split_top_level(text):
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur.strip())
            cur = ''
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def translate_launches(text, path):
    out, i = [], 0
    while True:
        j = text.find('<<<', i)
        if j < 0:
            out.append(text[i:])
            return ''.join(out)
        # The kernel: an identifier, optionally with template arguments, before `<<<`.
        k = j
        while k > i and text[k - 1].isspace():
            k -= 1
        if text[k - 1] == '>':
            depth = 0
            while True:
                k -= 1
                if k < i:
                    raise TranslationError(f'{path}:{line_of(text, j)}: cannot find the kernel name')
                if text[k] == '>':
                    depth += 1
                elif text[k] == '<':
                    depth -= 1
                    if depth == 0:
                        break
            while k > i and text[k - 1].isspace():
                k -= 1
        while k > i and (text[k - 1].isalnum() or text[k - 1] in '_:'):
            k -= 1
        kernel = text[k:j].strip()
        if not re.match(r'^[A-Za-z_:][A-Za-z0-9_:]*(\s*<.*>)?$', kernel, re.S):
            raise TranslationError(f'{path}:{line_of(text, j)}: cannot parse kernel name {kernel!r}')
        e = text.find('>>>', j)
        if e < 0:
            raise TranslationError(f'{path}:{line_of(text, j)}: unterminated <<<')
        config = split_top_level(text[j + 3:e])
        if not 2 <= len(config) <= 4 or any(not c for c in config):
            raise TranslationError(f'{path}:{line_of(text, j)}: a launch needs 2 to 4 configuration values')
        grid, block = config[0], config[1]
        smem = config[2] if len(config) > 2 else '0'
        stream = config[3] if len(config) > 3 else 'nullptr'
        a = e + 3
        while text[a].isspace():
            a += 1
        if text[a] != '(':
            raise TranslationError(f'{path}:{line_of(text, j)}: expected the kernel arguments after >>>')
        depth, m = 0, a
        while True:
            if m >= len(text):
                raise TranslationError(f'{path}:{line_of(text, j)}: unbalanced kernel arguments')
            if text[m] == '(':
                depth += 1
            elif text[m] == ')':
                depth -= 1
                if depth == 0:
                    break
            m += 1
        args = text[a + 1:m]
        name = re.sub(r'\s+', ' ', kernel)
        replacement = (f'::orca::cuda_twin::LaunchKernel("{name}", dim3({grid}), dim3({block}), '
                       f'static_cast<size_t>({smem}), {stream}, [=] {{ {kernel}({args}); }})')
        out.append(text[i:k])
        out.append(keep_lines(text[k:m + 1], replacement))
        i = m + 1


def translate_shared(text):
    def dynamic(m):
        t, name = m.group('type'), m.group('name')
        return keep_lines(m.group(0), f'{t}* {name} = static_cast<{t}*>(::orca::cuda_twin::DynamicShared());')

    def static(m):
        t, name = m.group('type'), m.group('name')
        dims = re.sub(r'\s+', '', m.group('dims'))
        return keep_lines(m.group(0), f'auto& {name} = ::orca::cuda_twin::StaticShared<{t}{dims}>([] {{}});')

    return STATIC.sub(static, DYNAMIC.sub(dynamic, text))


def translate(text, path):
    text = translate_launches(translate_shared(text), path)
    for token in ('__shared__', '<<<', '>>>'):
        pos = text.find(token)
        if pos >= 0:
            raise TranslationError(f'{path}:{line_of(text, pos)}: cannot translate this use of {token}')
    return text


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) == 4 else src
    with open(src, encoding='utf-8') as f:
        text = f.read()
    try:
        body = translate(text, name)
    except TranslationError as e:
        sys.exit(f'cu_to_cc.py: error: {e}')
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    with open(dst, 'w', encoding='utf-8') as f:
        f.write(f'// Generated by cuda_twin/cu_to_cc.py from {name}: do not edit.\n')
        f.write(f'#line 1 "{name}"\n')
        f.write(body)


if __name__ == '__main__':
    main()
