// `orca model pull` end to end: the real binary against a stand-in Hugging Face Hub and
// CDN on loopback (hub_stub.mjs) serving models/stories260K as a repository, and tar
// archives made by Python's tarfile. Digests are computed here with node's crypto,
// independently of the binary. After a pull, `orca model inspect` and `orca generate`
// run on the pulled directory, and generate's greedy text must equal the original's.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startHub, sha256 } from './hub_stub.mjs';

const root = process.env.ORCA_SOURCE_DIR || path.resolve(import.meta.dirname, '../../..');
const orca = process.env.ORCA_BIN;
const modelDir = path.join(root, 'models/stories260K');
const TOKEN = 'hf_test_token_9b1f';
const COMMIT = 'c0ffee0123456789abcdef0123456789abcdef01';
const REPO = 'orca-test/stories260K';

const read = (f) => fs.readFileSync(path.join(modelDir, f));
const served = {
  'config.json': read('config.json'),
  'generation_config.json': read('generation_config.json'),
  'model.safetensors': read('model.safetensors'),
  'tokenizer.json': read('tokenizer.json'),
  'tokenizer.model': read('tokenizer.model'),
  'tokenizer_config.json': read('tokenizer_config.json'),
  'README.md': read('README.md'),
  'pytorch_model.bin': Buffer.alloc(4096, 7),     // a duplicate format: skipped
  'images/logo.png': Buffer.alloc(512, 1),        // not a checkpoint file: skipped
};
const wanted = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json',
                'tokenizer.model', 'tokenizer_config.json'];
const lfs = new Set(['model.safetensors', 'tokenizer.model', 'pytorch_model.bin', 'images/logo.png']);
const brokenConfig = JSON.parse(served['config.json']);
brokenConfig.num_hidden_layers = 7;  // the weights hold 5 layers: `orca serve` refuses it

let hub;
let tmp;

// Builds a tar archive with Python's tarfile: entries [{name, data?, type?, linkname?}].
function makeTar(file, entries, gz = true) {
  const script = `
import io, json, sys, tarfile
entries = json.load(sys.stdin)
with tarfile.open(sys.argv[1], 'w:gz' if sys.argv[2] == '1' else 'w', format=tarfile.PAX_FORMAT) as t:
    for e in entries:
        ti = tarfile.TarInfo(e['name'])
        if e.get('type') == 'symlink':
            ti.type = tarfile.SYMTYPE; ti.linkname = e['linkname']; t.addfile(ti)
        elif e.get('type') == 'dir':
            ti.type = tarfile.DIRTYPE; ti.mode = 0o755; t.addfile(ti)
        else:
            data = open(e['src'], 'rb').read() if 'src' in e else e['data'].encode()
            ti.size = len(data); ti.mode = 0o644; t.addfile(ti, io.BytesIO(data))
`;
  const r = spawnSync('python3', ['-c', script, file, gz ? '1' : '0'], { input: JSON.stringify(entries) });
  assert.equal(r.status, 0, r.stderr.toString());
  return fs.readFileSync(file);
}

function run(args, env = {}) {
  return new Promise((resolve) => {
    // Loopback servers only: a proxy from the environment must not be used.
    const base = { ...process.env, ORCA_LOG_LEVEL: 'warning', no_proxy: '127.0.0.1,localhost',
                   NO_PROXY: '127.0.0.1,localhost' };
    const p = spawn(orca, args, { env: { ...base, ...env } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const hubEnv = () => ({ HF_ENDPOINT: hub.endpoint, HF_TOKEN: TOKEN });
const pull = (uri, dir, extra = [], env = hubEnv()) => run(['model', 'pull', uri, dir, ...extra], env);
const fresh = (name) => path.join(tmp, name);

before(async (t) => {
  if (!orca) {
    if (process.env.CI) throw new Error('ORCA_BIN is not set in CI');
    t.skip('ORCA_BIN is not set');
    return;
  }
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'orca-pull-'));
  const archiveEntries = [{ name: 'stories260K', type: 'dir' },
    ...wanted.map((f) => ({ name: `stories260K/${f}`, src: path.join(modelDir, f) }))];
  const archives = {
    'stories260K.tar.gz': makeTar(path.join(tmp, 'a.tgz'), archiveEntries),
    'flat.tar': makeTar(path.join(tmp, 'a.tar'),
                        wanted.map((f) => ({ name: f, src: path.join(modelDir, f) })), false),
    'traversal.tar.gz': makeTar(path.join(tmp, 'b.tgz'),
                                [...archiveEntries, { name: '../escaped.txt', data: 'pwned' }]),
    'absolute.tar.gz': makeTar(path.join(tmp, 'c.tgz'),
                               [{ name: '/tmp/orca-pull-absolute.txt', data: 'pwned' }]),
    'symlink.tar.gz': makeTar(path.join(tmp, 'd.tgz'),
                              [...archiveEntries, { name: 'stories260K/evil', type: 'symlink',
                                                    linkname: '../../../../etc' }]),
  };
  hub = await startHub({
    token: TOKEN,
    archives,
    repos: {
      [REPO]: { revisions: { main: COMMIT, 'refs/pr/1': 'ab'.repeat(20) }, files: served, lfs },
      'orca-test/broken': { revisions: { main: 'be'.repeat(20) },
                            files: { ...served, 'config.json': Buffer.from(JSON.stringify(brokenConfig)) },
                            lfs },
    },
  });
});

after(async () => {
  if (hub) await hub.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

function assertPulledTree(dir) {
  for (const f of wanted) {
    assert.equal(sha256(fs.readFileSync(path.join(dir, f))), sha256(served[f]), f);
  }
  for (const f of ['README.md', 'pytorch_model.bin', 'images']) {
    assert.ok(!fs.existsSync(path.join(dir, f)), `${f} should not be pulled`);
  }
  assert.ok(!fs.existsSync(`${dir}.partial`), 'the staging directory is removed');
}

test('pulls a hub repository through a CDN redirect, and the result serves', async () => {
  hub.reset();
  const dir = fresh('hub');
  const r = await pull(`hf://${REPO}`, dir);
  assert.equal(r.code, 0, r.stderr);
  assertPulledTree(dir);
  const marker = JSON.parse(fs.readFileSync(path.join(dir, '.orca-pull.json')));
  assert.deepEqual(marker, { uri: `hf://${REPO}`, commit: COMMIT });
  // The token went to the hub, never to the CDN (another origin).
  const cdn = hub.log.filter((e) => e.server === 'cdn');
  assert.ok(cdn.length >= 2, 'LFS files come from the CDN');
  for (const e of cdn) assert.equal(e.authorization, '', `token leaked to the CDN: ${e.url}`);
  for (const e of hub.log.filter((x) => x.server === 'hub')) assert.equal(e.authorization, `Bearer ${TOKEN}`);
  assert.ok(hub.log.some((e) => e.url.includes('cursor=')), 'the tree listing was paginated');
  assert.ok(!r.stderr.includes(TOKEN), 'the token is never logged');
  assert.match(r.stderr, /overall/);  // a progress line
  // Files are fetched at the resolved commit, not at the moving branch.
  assert.ok(hub.log.some((e) => e.url.includes(`/resolve/${COMMIT}/`)));

  const inspect = await run(['model', 'inspect', dir]);
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.match(inspect.stdout, /layers\s+5/);
  const args = ['generate', '--prompt', 'Once upon a time', '--max-tokens', '40'];
  const pulled = await run([...args, '--model', dir]);
  const original = await run([...args, '--model', modelDir]);
  assert.equal(pulled.code, 0, pulled.stderr);
  assert.equal(original.code, 0, original.stderr);
  assert.ok(pulled.stdout.length > 20);
  assert.equal(pulled.stdout, original.stdout);

  // An init container restarted: the complete pull is recognised without the network.
  hub.reset();
  const again = await pull(`hf://${REPO}`, dir);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /already holds/);
  assert.equal(hub.log.length, 0);
});

test('a revision is resolved through the API, refs/pr/N encoded, 503s retried', async () => {
  hub.reset();
  hub.faults.apiFailures = 2;
  const dir = fresh('pr');
  const r = await pull(`hf://${REPO}@refs/pr/1`, dir);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((r.stderr.match(/HTTP 503 .*; retrying in/g) || []).length, 2, r.stderr);
  assert.ok(hub.log.some((e) => e.url === `/api/models/${REPO}/revision/refs%2Fpr%2F1`), JSON.stringify(hub.log[0]));
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, '.orca-pull.json'))).commit, 'ab'.repeat(20));
});

test('a refused or missing token fails with exit code 3 and names HF_TOKEN', async () => {
  for (const env of [{ HF_ENDPOINT: hub.endpoint, HF_TOKEN: '' }, { HF_ENDPOINT: hub.endpoint, HF_TOKEN: 'wrong' }]) {
    const dir = fresh(`denied-${env.HF_TOKEN}`);
    const r = await pull(`hf://${REPO}`, dir, [], env);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /HTTP 401/);
    assert.match(r.stderr, /the token in HF_TOKEN .*was refused/);
    assert.ok(!fs.existsSync(dir));
    if (env.HF_TOKEN) assert.ok(!r.stderr.includes(env.HF_TOKEN) || env.HF_TOKEN === 'wrong');
  }
  // --token-file works like HF_TOKEN.
  const tokenFile = path.join(tmp, 'token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  const r = await pull(`hf://${REPO}`, fresh('token-file'), ['--token-file', tokenFile], { HF_ENDPOINT: hub.endpoint });
  assert.equal(r.code, 0, r.stderr);
});

test('an unknown repository or revision fails with exit code 4', async () => {
  let r = await pull('hf://orca-test/nope', fresh('404a'));
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, /no repository 'orca-test\/nope' or no revision 'main'/);
  r = await pull(`hf://${REPO}@v9`, fresh('404b'));
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, /revision 'v9'/);
  r = await pull('hf://not a uri', fresh('bad'));
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /model URI/);
});

test('a connection dropped mid-file is resumed with a Range request', async () => {
  hub.reset();
  hub.faults.drop[`${REPO}/model.safetensors`] = { after: 300000, times: 2 };
  const dir = fresh('dropped');
  const r = await pull(`hf://${REPO}`, dir);
  assert.equal(r.code, 0, r.stderr);
  assertPulledTree(dir);
  const ranges = hub.log.filter((e) => e.server === 'cdn' && e.url.includes('model.safetensors')).map((e) => e.range);
  assert.deepEqual(ranges, ['', 'bytes=300000-', 'bytes=600000-']);
  assert.match(r.stderr, /retrying/);

  // A server that ignores Range answers 200 with the whole body: the file restarts at 0.
  hub.reset();
  hub.faults.drop[`${REPO}/model.safetensors`] = { after: 300000, times: 1 };
  hub.faults.ignoreRange[`${REPO}/model.safetensors`] = true;
  const dir2 = fresh('dropped-no-range');
  const r2 = await pull(`hf://${REPO}`, dir2);
  assert.equal(r2.code, 0, r2.stderr);
  assertPulledTree(dir2);
});

test('an interrupted pull leaves nothing servable and resumes on the next run', async () => {
  hub.reset();
  hub.faults.drop[`${REPO}/model.safetensors`] = { after: 500000, times: 1 };
  const dir = fresh('resume');
  const r = await pull(`hf://${REPO}`, dir, ['--retries', '0']);
  assert.equal(r.code, 6, r.stderr);
  assert.match(r.stderr, /model.safetensors: giving up after 1 attempts \(500000 bytes kept/);
  assert.ok(!fs.existsSync(dir), 'nothing at DIR after a failed pull');
  assert.equal(fs.statSync(`${dir}.partial/files/model.safetensors.part`).size, 500000);
  hub.reset();
  const again = await pull(`hf://${REPO}`, dir);
  assert.equal(again.code, 0, again.stderr);
  assertPulledTree(dir);
  const ranges = hub.log.filter((e) => e.server === 'cdn' && e.url.includes('model.safetensors')).map((e) => e.range);
  assert.deepEqual(ranges, ['bytes=500000-']);
  // Files completed by the first run are not fetched again.
  for (const f of ['config.json', 'generation_config.json']) {
    assert.ok(!hub.log.some((e) => e.url === `/${REPO}/resolve/${COMMIT}/${f}`), f);
  }
  assert.ok(hub.log.some((e) => e.url === `/${REPO}/resolve/${COMMIT}/tokenizer_config.json`));
});

test('a corrupt file fails with exit code 5 naming the file and both digests', async () => {
  hub.reset();
  hub.faults.corrupt[`${REPO}/model.safetensors`] = true;
  const dir = fresh('corrupt');
  const r = await pull(`hf://${REPO}`, dir);
  assert.equal(r.code, 5, r.stderr);
  const corrupt = Buffer.from(served['model.safetensors']);
  corrupt[corrupt.length >> 1] ^= 0xff;
  assert.ok(r.stderr.includes(
    `model.safetensors: SHA-256 mismatch: expected ${sha256(served['model.safetensors'])}, got ${sha256(corrupt)}; the file was deleted`),
  r.stderr);
  assert.ok(!fs.existsSync(dir));
  assert.ok(!fs.existsSync(`${dir}.partial/files/model.safetensors`));
  assert.ok(!fs.existsSync(`${dir}.partial/files/model.safetensors.part`));
});

test('a checkpoint orca cannot serve fails the pull and installs nothing', async () => {
  const dir = fresh('broken');
  const r = await pull('hf://orca-test/broken', dir);
  assert.equal(r.code, 5, r.stderr);
  assert.match(r.stderr, /the pulled model cannot be served/);
  assert.match(r.stderr, /num_hidden_layers/);
  assert.ok(!fs.existsSync(dir));
});

test('an archive is verified with --sha256, unpacked and served', async () => {
  hub.reset();
  const url = `${hub.endpoint}/archives/stories260K.tar.gz`;
  const digest = sha256(fs.readFileSync(path.join(tmp, 'a.tgz')));
  const dir = fresh('archive');
  hub.faults.drop['archive:stories260K.tar.gz'] = { after: 20000, times: 1 };
  const r = await pull(url, dir, ['--sha256', digest.toUpperCase()]);
  assert.equal(r.code, 0, r.stderr);
  for (const f of wanted) assert.equal(sha256(fs.readFileSync(path.join(dir, f))), sha256(served[f]), f);
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, '.orca-pull.json'))).commit, digest);
  assert.ok(hub.log.some((e) => e.range === 'bytes=20000-'), 'the archive download resumed');
  const inspect = await run(['model', 'inspect', dir]);
  assert.equal(inspect.code, 0, inspect.stderr);

  const flat = fresh('flat');
  const f = await pull(`${hub.endpoint}/archives/flat.tar`, flat);
  assert.equal(f.code, 0, f.stderr);
  assert.match(f.stderr, /no --sha256/);
  assert.ok(fs.existsSync(path.join(flat, 'model.safetensors')));

  const bad = fresh('archive-bad');
  const wrong = 'f'.repeat(64);
  const b = await pull(url, bad, ['--sha256', wrong]);
  assert.equal(b.code, 5, b.stderr);
  assert.ok(b.stderr.includes(`stories260K.tar.gz: SHA-256 mismatch: expected ${wrong}, got ${digest}`), b.stderr);
  assert.ok(!fs.existsSync(bad));

  const missing = await pull(`${hub.endpoint}/archives/none.tar.gz`, fresh('archive-404'));
  assert.equal(missing.code, 4, missing.stderr);
});

test('unsafe archives are refused and write nothing outside the staging area', async () => {
  const cases = [['traversal.tar.gz', /entry '\.\.\/escaped\.txt' refused/],
                 ['absolute.tar.gz', /entry '\/tmp\/orca-pull-absolute\.txt' refused: .*absolute/],
                 ['symlink.tar.gz', /entry 'stories260K\/evil' refused: .*leaves the destination/]];
  for (const [name, message] of cases) {
    const dir = fresh(`unsafe-${name}`);
    const r = await pull(`${hub.endpoint}/archives/${name}`, dir);
    assert.equal(r.code, 5, `${name}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.ok(!fs.existsSync(dir));
  }
  assert.ok(!fs.existsSync(path.join(tmp, 'escaped.txt')));
  assert.ok(!fs.existsSync(path.join(tmp, 'unsafe-traversal.tar.gz.partial', 'escaped.txt')));
  assert.ok(!fs.existsSync('/tmp/orca-pull-absolute.txt'));
});

test('an existing directory that no pull wrote is not replaced', async () => {
  const dir = fresh('occupied');
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'mine.txt'), 'keep');
  const r = await pull(`hf://${REPO}`, dir);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /holds files no pull wrote/);
  assert.equal(fs.readFileSync(path.join(dir, 'mine.txt'), 'utf8'), 'keep');
});

test('a different URI replaces an earlier pull atomically', async () => {
  const dir = fresh('replace');
  let r = await pull(`${hub.endpoint}/archives/flat.tar`, dir);
  assert.equal(r.code, 0, r.stderr);
  r = await pull(`hf://${REPO}`, dir);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, '.orca-pull.json'))).uri, `hf://${REPO}`);
  assertPulledTree(dir);
});

test('an archive over real https: trusted through SSL_CERT_FILE, refused without it', async (t) => {
  if (spawnSync('openssl', ['version']).error) {
    if (process.env.CI) throw new Error('the openssl command is missing');
    t.skip('no openssl command to make a certificate');
    return;
  }
  const key = path.join(tmp, 'tls.key');
  const cert = path.join(tmp, 'tls.crt');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key,
    '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
  assert.equal(made.status, 0, made.stderr.toString());
  const body = fs.readFileSync(path.join(tmp, 'a.tgz'));
  const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    res.writeHead(200, { 'Content-Length': body.length });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `https://127.0.0.1:${server.address().port}/models/stories260K.tar.gz`;
    const untrusted = await pull(url, fresh('tls-untrusted'), ['--sha256', sha256(body)], {});
    assert.equal(untrusted.code, 1, untrusted.stderr);
    assert.match(untrusted.stderr, /SSL_CERT_FILE/);
    assert.doesNotMatch(untrusted.stderr, /retrying/);  // not transient: no retries
    const dir = fresh('tls');
    const r = await pull(url, dir, ['--sha256', sha256(body)],
                        { SSL_CERT_FILE: cert, CURL_CA_BUNDLE: '' });  // CURL_CA_BUNDLE wins when set
    assert.equal(r.code, 0, r.stderr);
    assert.equal(sha256(fs.readFileSync(path.join(dir, 'model.safetensors'))), sha256(served['model.safetensors']));
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});
