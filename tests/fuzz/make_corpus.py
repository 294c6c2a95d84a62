#!/usr/bin/env python3
"""Regenerates the seed corpora (tests/fuzz/corpus/<target>/) and the dictionaries
(tests/fuzz/dict/<target>.dict) of the fuzz targets from real files of the checkout:
the stories260K checkpoint, the chat templates of tests/engine/chat/testdata, the
request bodies of e2e/serving/bad_input.test.mjs, the CRD examples and the golden
manifests the controller renders. Deterministic; run from anywhere:

    python3 tests/fuzz/make_corpus.py

Files that are not derived from the checkout (public Hugging Face config.json files,
kubeconfigs, watch events) are written out below, each saying where it comes from.
Crash reproducers never go here: they go to tests/fuzz/regressions/ (docs/fuzzing.md).
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FUZZ = os.path.join(ROOT, "tests", "fuzz")
MODEL = os.path.join(ROOT, "models", "stories260K")


def read(path, mode="r"):
    with open(os.path.join(ROOT, path), mode) as f:
        return f.read()


class Corpus:
    def __init__(self, target):
        self.dir = os.path.join(FUZZ, "corpus", target)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode()
        with open(os.path.join(self.dir, name), "wb") as f:
            f.write(data)


def j(obj):
    return json.dumps(obj, indent=2) + "\n"


# --- model files -------------------------------------------------------------------

def safetensors_seeds():
    c = Corpus("safetensors")
    blob = read("models/stories260K/model.safetensors", "rb")
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + n])
    # The real header with only the first bytes of data: every offset runs past the end.
    c.add("stories260K-header-truncated.safetensors", blob[: 8 + n + 16])
    # Two real tensors with their real bytes, offsets rewritten: a file the reader accepts.
    picked = {"__metadata__": header["__metadata__"]}
    data = b""
    for name in ["model.norm.weight", "model.layers.0.input_layernorm.weight"]:
        begin, end = header[name]["data_offsets"]
        picked[name] = dict(header[name], data_offsets=[len(data), len(data) + end - begin])
        data += blob[8 + n + begin : 8 + n + end]
    h = json.dumps(picked, separators=(",", ":")).encode()
    h += b" " * (-(len(h) + 8) % 8)
    c.add("stories260K-two-tensors.safetensors", struct.pack("<Q", len(h)) + h + data)
    # The empty checkpoint safetensors' own writer produces.
    h = b'{"__metadata__":{"format":"pt"}}'
    h += b" " * (-(len(h) + 8) % 8)
    c.add("empty.safetensors", struct.pack("<Q", len(h)) + h)
    return header


def index_seeds(header):
    c = Corpus("safetensors_index")
    names = sorted(k for k in header if k != "__metadata__")
    total = sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")
    split = {
        name: "model-0000%d-of-00002.safetensors" % (1 if i < len(names) // 2 else 2)
        for i, name in enumerate(names)
    }
    c.add("stories260K-two-shards.json", j({"metadata": {"total_size": total}, "weight_map": split}))
    c.add("stories260K-one-file.json",
          j({"metadata": {"total_size": total}, "weight_map": {n: "model.safetensors" for n in names}}))


# Public config.json / generation_config.json files of Hugging Face checkpoints
# (openai-community/gpt2, Qwen/Qwen2.5-0.5B-Instruct, mistralai/Mistral-7B-v0.1,
# TinyLlama/TinyLlama-1.1B-Chat-v1.0, meta-llama/Llama-3.2-1B), as published.
GPT2_CONFIG = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
    "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
    "resid_pdrop": 0.1, "summary_activation": None, "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
    "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    "vocab_size": 50257,
}
QWEN25_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896,
    "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768,
    "max_window_layers": 21, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.43.1", "use_cache": True,
    "use_sliding_window": False, "vocab_size": 151936,
}
MISTRAL_CONFIG = {
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0",
    "use_cache": True, "vocab_size": 32000,
}
TINYLLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 5632, "max_position_embeddings": 2048, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.35.0",
    "use_cache": True, "vocab_size": 32000,
}
LLAMA32_GENERATION = {"bos_token_id": 128000, "do_sample": True, "eos_token_id": [128001, 128008, 128009],
                      "temperature": 0.6, "top_p": 0.9, "transformers_version": "4.45.0.dev0"}
GPT2_GENERATION = {"_from_model_config": True, "bos_token_id": 50256, "eos_token_id": 50256,
                   "transformers_version": "4.27.0.dev0"}


def config_seeds():
    c = Corpus("model_config")
    c.add("stories260K-config.json", read("models/stories260K/config.json"))
    c.add("gpt2-config.json", j(GPT2_CONFIG))
    c.add("qwen2.5-0.5b-config.json", j(QWEN25_CONFIG))
    c.add("mistral-7b-config.json", j(MISTRAL_CONFIG))
    c.add("tinyllama-config.json", j(TINYLLAMA_CONFIG))
    g = Corpus("generation_config")
    g.add("stories260K-generation_config.json", read("models/stories260K/generation_config.json"))
    g.add("llama3.2-generation_config.json", j(LLAMA32_GENERATION))
    g.add("gpt2-generation_config.json", j(GPT2_GENERATION))


# --- tokenizers and chat templates ----------------------------------------------------

def tokenizer_seeds():
    c = Corpus("tokenizer_json")
    c.add("stories260K-tokenizer.json", read("models/stories260K/tokenizer.json"))
    # A byte-level BPE tokenizer as `orca model random` writes it (the smallest vocabulary).
    orca = os.environ.get("ORCA_BIN", os.path.join(ROOT, "build", "engine", "cli", "orca"))
    if os.access(orca, os.X_OK):
        out = os.path.join(FUZZ, "corpus", ".synthetic")
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([orca, "model", "random", "--preset", "tiny", "--out", out, "--hidden", "8",
                        "--layers", "1", "--vocab", "300"],
                       check=True, stdout=subprocess.DEVNULL)
        c.add("synthetic-byte-level-tokenizer.json", open(os.path.join(out, "tokenizer.json"), "rb").read())
        shutil.rmtree(out)
    else:
        print("note: %s not built; the byte-level tokenizer.json seed is left out" % orca)
    t = Corpus("tokenizer_config")
    t.add("stories260K-tokenizer_config.json", read("models/stories260K/tokenizer_config.json"))
    qwen = read("tests/engine/chat/testdata/qwen25_instruct.jinja")
    t.add("qwen2.5-style-tokenizer_config.json", j({
        "add_bos_token": False, "add_prefix_space": False,
        "bos_token": None, "eos_token": {"content": "<|im_end|>", "lstrip": False, "normalized": False,
                                         "rstrip": False, "single_word": False, "special": True},
        "chat_template": qwen, "model_max_length": 131072, "tokenizer_class": "Qwen2Tokenizer"}))
    t.add("template-list-tokenizer_config.json", j({
        "add_bos_token": True, "bos_token": "<s>", "eos_token": "</s>",
        "chat_template": [{"name": "default", "template": read("tests/engine/chat/testdata/zephyr_7b_beta.jinja")},
                          {"name": "tool_use", "template": "{{ messages[0]['content'] }}"}]}))
    m = Corpus("tokenizer_model")
    m.add("stories260K-tokenizer.model", read("models/stories260K/tokenizer.model", "rb"))


def chat_template_seeds():
    c = Corpus("chat_template")
    d = "tests/engine/chat/testdata"
    for name in sorted(os.listdir(os.path.join(ROOT, d))):
        if name.endswith(".jinja"):
            c.add(name, read(os.path.join(d, name)))


# --- request bodies -----------------------------------------------------------------------

def request_seeds():
    """The bodies e2e/serving/bad_input.test.mjs sends, evaluated with node."""
    text = read("e2e/serving/bad_input.test.mjs")
    start = text.index("const ok = ")
    end = text.index("];", text.index("const cases = [")) + 2
    script = (
        "const C='/v1/completions', CH='/v1/chat/completions';\n" + text[start:end] +
        "\nprocess.stdout.write(JSON.stringify(cases.map(([n, p, b]) => [n, p,"
        " Buffer.isBuffer(b) ? b.toString('latin1') : typeof b === 'string' ? b : JSON.stringify(b),"
        " Buffer.isBuffer(b)])));")
    cases = json.loads(subprocess.run(["node", "-e", script], check=True, capture_output=True).stdout)
    completion, chat = Corpus("completion_request"), Corpus("chat_request")
    for name, path, body, binary in cases:
        data = body.encode("latin1") if binary else body.encode()
        if len(data) > 4096:
            continue  # the size limits are the HTTP layer's, not the parser's
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
        (chat if path.endswith("chat/completions") else completion).add(slug + ".json", data)
    # Bodies of the OpenAI client tests (e2e/serving/openai_client.test.mjs) and the
    # tool-calling shape the chat template reads.
    completion.add("stream-with-usage.json", j({
        "model": "stories260K", "prompt": ["Once upon a time", [1, 403, 407]], "max_tokens": 16,
        "temperature": 0.8, "top_p": 0.95, "top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
        "stop": ["\n\n", "The end"], "stop_token_ids": [2], "seed": 1234, "logprobs": 2,
        "stream": True, "stream_options": {"include_usage": True}, "n": 2, "echo": False,
        "ignore_eos": False, "min_tokens": 1, "logit_bias": {"13": -100}}))
    # Guided decoding and structured outputs: a JSON schema is parsed from client input.
    completion.add("guided-json-schema.json", j({
        "model": "stories260K", "prompt": "Once upon a time", "max_tokens": 64,
        "guided_json": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10, "pattern": "^[A-Z][a-z]+$"},
            "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 130},
            "tags": {"type": "array", "items": {"enum": ["a", "b", None, 3]}, "minItems": 1, "maxItems": 3},
            "when": {"type": "string", "format": "date-time"}, "pet": {"$ref": "#/$defs/pet"},
            "any": {"anyOf": [{"type": "number"}, {"type": ["boolean", "null"]}, {"const": {"k": [1]}}]}},
            "required": ["name", "age"], "additionalProperties": False,
            "$defs": {"pet": {"type": "object", "properties": {"kind": {"type": "string"}}}}}}))
    completion.add("guided-regex.json", j({"model": "stories260K", "prompt": "x",
                                           "guided_regex": "[0-9]{3}-(?:ab|c)*\\d+\\.?",
                                           "echo": True, "logprobs": 1, "prompt_logprobs": 2}))
    completion.add("guided-choice.json", j({"prompt": "x", "guided_choice": ["yes", "no", "a.b"]}))
    chat.add("response-format-json-schema.json", j({
        "model": "stories260K", "max_tokens": 32, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "r", "strict": True, "schema": {
            "type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer", "maximum": -3}},
            "required": ["ok", "n"], "additionalProperties": False}}}}))
    chat.add("response-format-json-object.json", j({
        "messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_object"}}))
    completion.add("tokenize.json", j({"model": "stories260K", "prompt": "Once upon a time",
                                       "add_special_tokens": True}))
    completion.add("detokenize.json", j({"model": "stories260K", "tokens": [1, 403, 407, 261]}))
    chat.add("tools-and-kwargs.json", j({
        "model": "stories260K", "max_tokens": 8, "temperature": 0, "logprobs": True, "top_logprobs": 2,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}],
        "add_generation_prompt": True,
        "chat_template_kwargs": {"enable_thinking": False, "tools": [{"type": "function", "function": {
            "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]},
        "stream": True, "stream_options": {"include_usage": True}}))


# --- configuration ----------------------------------------------------------------------

def engine_yaml_seeds():
    """The engine.yaml files of the ConfigMaps in the controller's golden manifests."""
    c = Corpus("engine_yaml")
    golden = "tests/controller/testdata/golden"
    for name in sorted(os.listdir(os.path.join(ROOT, golden))):
        text = read(os.path.join(golden, name))
        m = re.search(r"^  engine\.yaml: \|\n((?:    .*\n|\n)+)", text, re.M)
        if m:
            body = "".join(line[4:] + "\n" for line in m.group(1).splitlines())
            c.add(name.replace(".yaml", "-engine.yaml"), body)


KUBECONFIG_KIND = """apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=
    server: https://127.0.0.1:41029
  name: kind-orca
- cluster:
    insecure-skip-tls-verify: true
    server: http://127.0.0.1:8080
  name: local
contexts:
- context:
    cluster: kind-orca
    user: kind-orca
  name: kind-orca
- context:
    cluster: local
    namespace: orca-system
    user: token-user
  name: other-context
current-context: kind-orca
kind: Config
preferences: {}
users:
- name: kind-orca
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBCi0tLS0tRU5EIFJTQSBQUklWQVRFIEtFWS0tLS0tCg==
- name: token-user
  user:
    token: eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.e30.c2lnbmF0dXJl
"""
# Files referenced by path (resolved beside the kubeconfig, where they do not exist), a
# tokenFile, and the exec plugin orca-controller refuses.
KUBECONFIG_FILES = """apiVersion: v1
kind: Config
current-context: prod
clusters: [{name: prod, cluster: {server: 'https://10.0.0.1:6443', certificate-authority: ca.crt}}]
users:
- {name: admin, user: {client-certificate: admin.crt, client-key: admin.key}}
- {name: eks, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}}}
contexts:
- {name: prod, context: {cluster: prod, user: admin}}
- {name: other-context, context: {cluster: prod, user: eks}}
"""


def kubeconfig_seeds():
    c = Corpus("kubeconfig")
    c.add("kind.yaml", KUBECONFIG_KIND)
    c.add("file-references.yaml", KUBECONFIG_FILES)


# --- controller API objects ---------------------------------------------------------------

def controller_seeds():
    d, m = Corpus("inference_deployment"), Corpus("manifest_yaml")
    examples = [os.path.join("crds/examples", n) for n in sorted(os.listdir(os.path.join(ROOT, "crds/examples")))]
    examples += [os.path.join("tests/controller/testdata/examples", n)
                 for n in sorted(os.listdir(os.path.join(ROOT, "tests/controller/testdata/examples")))]
    for path in examples:
        d.add(os.path.basename(path), read(path))
        m.add(os.path.basename(path), read(path))
    # The same objects as the API server sends them: JSON (PyYAML converts them).
    try:
        import yaml
        for path in examples[:3]:
            for i, obj in enumerate(yaml.safe_load_all(read(path))):
                if obj and obj.get("kind") == "InferenceDeployment":
                    name = os.path.basename(path).replace(".yaml", "-%d.json" % i)
                    d.add("api-object-" + name, json.dumps(obj) + "\n")
    except ImportError:
        print("note: PyYAML is missing; the JSON forms of the examples are left out")
    # Rendered manifests (every kind the controller writes), the two smallest.
    golden = "tests/controller/testdata/golden"
    for name in ["single-gpu.yaml", "cpu-hpa.yaml"]:
        m.add("golden-" + name, read(os.path.join(golden, name)))


# Watch events in the API server's format (one JSON object per line), as the fake API
# server of tests/controller streams them: objects, a bookmark, a 410 Gone error.
WATCH_STREAMS = {
    "pods.jsonl": [
        {"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "tinyllama-g0-scheduler-7d9f8-abcde", "namespace": "default", "resourceVersion": "1042",
            "uid": "0b5c6a3e-4f0e-4a59-9a43-0a1e2f3b4c5d",
            "labels": {"serving.orca.dev/deployment": "tinyllama", "serving.orca.dev/group": "0"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}},
        {"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "tinyllama-g0-scheduler-7d9f8-abcde", "namespace": "default", "resourceVersion": "1043",
            "deletionTimestamp": "2024-05-01T12:00:00Z",
            "labels": {"serving.orca.dev/deployment": "tinyllama"}}}},
        {"type": "DELETED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "tinyllama-g0-scheduler-7d9f8-abcde", "namespace": "default", "resourceVersion": "1044"}}},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "1050"}}},
    ],
    "crs.jsonl": [
        {"type": "ADDED", "object": {"apiVersion": "serving.orca.dev/v1alpha1", "kind": "InferenceDeployment",
                                     "metadata": {"name": "tinyllama", "namespace": "default", "generation": 2,
                                                  "resourceVersion": "77"},
                                     "spec": {"model": {"uri": "hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0"}}}},
        {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                     "message": "too old resource version: 77 (1042)", "reason": "Expired",
                                     "code": 410}},
    ],
}


def watch_seeds():
    c = Corpus("watch_event")
    for name, events in WATCH_STREAMS.items():
        c.add(name, "".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))


# --- dictionaries -----------------------------------------------------------------------------

JSON_TOKENS = ['{', '}', '[', ']', ':', ',', '"', 'true', 'false', 'null', '-1', '0', '1e308',
               '1.5', '-0', '18446744073709551616', '\\u0000', '\\ud800', '\\"', '{}', '[]', '""']
YAML_TOKENS = ['---', '...', '- ', ': ', '? ', '|', '>', '|-', '&a ', '*a', '!!str ', '!!int ',
               '!!binary ', '~', 'null', 'true', 'yes', 'on', '0x1F', '0o17', '.inf', '.nan',
               '1e3', '"', "'", '#', '{', '}', '[', ']', '<<: ', '%YAML 1.2', '%TAG ']
JINJA_TOKENS = ['{{', '}}', '{%', '%}', '{#', '#}', '{%-', '-%}', '{{-', '-}}', 'for ', ' in ',
                'endfor', 'if ', 'elif ', 'else', 'endif', 'set ', 'macro ', 'endmacro', 'call ',
                'endcall', 'filter ', 'endfilter', 'raw', 'endraw', 'namespace(', 'loop.index',
                'loop.last', 'loop.cycle(', 'recursive', 'is defined', 'is not none', '|tojson',
                '|trim', '|length', '|join(', '|map(', '|selectattr(', '|items', '|replace(',
                '|format(', '|int', '|string', 'raise_exception(', 'strftime_now(', 'range(',
                'messages', "message['role']", "message['content']", 'tools', 'tool_calls',
                'add_generation_prompt', 'bos_token', 'eos_token', '.split(', '.startswith(',
                '.strip()', '~', '**', '//', '[::-1]', 'not ', ' and ', ' or ', 'none', 'True']


def dict_escape(token):
    out = []
    for b in token.encode():
        if b in (0x22, 0x5C) or b < 0x20 or b > 0x7E:
            out.append("\\x%02X" % b)
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def keys_of_corpus(target):
    """Every JSON/YAML mapping key and short string value in the target's seeds."""
    words = set()
    d = os.path.join(FUZZ, "corpus", target)
    for name in os.listdir(d):
        text = open(os.path.join(d, name), "rb").read().decode("utf-8", "replace")
        words.update(re.findall(r'"([A-Za-z_][A-Za-z0-9_./-]{1,40})"\s*:', text))
        words.update(re.findall(r'^\s*-?\s*([A-Za-z_][A-Za-z0-9_./-]{1,40}):', text, re.M))
    return words


def write_dict(target, base, extra=()):
    words = sorted(set(base) | set(extra) | keys_of_corpus(target))
    os.makedirs(os.path.join(FUZZ, "dict"), exist_ok=True)
    with open(os.path.join(FUZZ, "dict", target + ".dict"), "w") as f:
        f.write("# libFuzzer dictionary of %s_fuzzer: written by tests/fuzz/make_corpus.py\n" % target)
        for w in words:
            f.write(dict_escape(w) + "\n")


def dictionaries():
    for target in ["safetensors", "safetensors_index", "model_config", "generation_config",
                   "tokenizer_json", "tokenizer_config", "completion_request", "chat_request",
                   "watch_event"]:
        extra = []
        if target == "safetensors":
            extra = ["F32", "F16", "BF16", "I64", "U8", "BOOL", "F8_E4M3", "dtype", "shape",
                     "data_offsets", "__metadata__"]
        if target in ("tokenizer_json", "tokenizer_config"):
            extra = ["ByteLevel", "Metaspace", "Sequence", "Replace", "Prepend", "ByteFallback",
                     "Fuse", "Strip", "Split", "NFC", "NFKC", "TemplateProcessing", "BPE", "<s>",
                     "</s>", "<unk>", "\u2581", "<0x0A>", "ignore_merges", "byte_fallback"]
        if target == "chat_request":
            extra = ["system", "user", "assistant", "tool", "text", "image_url"]
        if target == "watch_event":
            extra = ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "\n"]
        write_dict(target, JSON_TOKENS, extra)
    write_dict("chat_template", JINJA_TOKENS)
    for target in ["engine_yaml", "inference_deployment", "manifest_yaml"]:
        write_dict(target, YAML_TOKENS + JSON_TOKENS)
    write_dict("kubeconfig", YAML_TOKENS + JSON_TOKENS,
               ["https://", "http://", ":6443", ":99999999999", ":0", "[::1]", "-data",
                "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", "-----BEGIN CERTIFICATE-----",
                "-----END CERTIFICATE-----", "/dev/null", "ca.crt"])
    write_dict("tokenizer_model", ["\x0a", "\x12", "\x1a", "\x22", "\x08", "\x10", "\x15",
                                   "\u2581", "<s>", "</s>", "<unk>", "<0x0A>", "identity", "nmt_nfkc"])


def main():
    header = safetensors_seeds()
    index_seeds(header)
    config_seeds()
    tokenizer_seeds()
    chat_template_seeds()
    request_seeds()
    engine_yaml_seeds()
    kubeconfig_seeds()
    controller_seeds()
    watch_seeds()
    dictionaries()
    total = 0
    for dirpath, _, files in os.walk(os.path.join(FUZZ, "corpus")):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
    print("corpus: %d bytes" % total)
    if total > 2 << 20:
        sys.exit("the corpus grew past 2 MiB: keep seeds small")


if __name__ == "__main__":
    main()
