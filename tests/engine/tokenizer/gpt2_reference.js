// Reference outputs for gpt2_reference_test.cc, from JavaScript implementations that
// share no code with orca.
//
//   node gpt2_reference.js MODE INPUT.jsonl OUTPUT.jsonl [GPT_3_ENCODER_DIR]
//
// INPUT holds one JSON string per line; OUTPUT gets one JSON array per line.
//   encode:        ids from the npm package gpt-3-encoder (openai/gpt-2's encoder.py
//                  ported to JS); "<|endoftext|>" is the special token 50256, as in
//                  Hugging Face's GPT-2 tokenizer.json.
//   split-gpt2, split-llama3, split-qwen2: the pieces that the pre-tokenizer regex
//                  matches, with JavaScript's RegExp (Node has no (?i:...) groups yet,
//                  so the contractions spell out both cases).
'use strict';
const fs = require('fs');
const path = require('path');

const [mode, input, output, encoderDir] = process.argv.slice(2);
const texts = fs.readFileSync(input, 'utf8').split('\n').filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));

const contractionsAnyCase = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]";
const patterns = {
  'split-gpt2': /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu,
  'split-llama3': new RegExp(contractionsAnyCase +
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", 'gu'),
  'split-qwen2': new RegExp(contractionsAnyCase +
      "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+", 'gu'),
};

const lines = [];
if (mode === 'encode') {
  const {encode} = require(path.resolve(encoderDir));
  const special = '<|endoftext|>';
  for (const text of texts) {
    const ids = [];
    text.split(special).forEach((part, i) => {
      if (i > 0) ids.push(50256);
      if (part.length > 0) ids.push(...encode(part));
    });
    lines.push(JSON.stringify(ids));
  }
} else if (patterns[mode]) {
  for (const text of texts) {
    lines.push(JSON.stringify(Array.from(text.matchAll(patterns[mode]), (m) => m[0])));
  }
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
fs.writeFileSync(output, lines.join('\n') + '\n');
