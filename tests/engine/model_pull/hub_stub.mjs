// A stand-in for the Hugging Face Hub and its CDN on loopback, speaking the parts of the
// hub's HTTP API that `orca model pull` uses:
//   GET /api/models/{org}/{name}/revision/{rev}        -> {"id", "sha", "siblings"}
//   GET /api/models/{org}/{name}/tree/{sha}?recursive=true[&cursor=N]
//        -> one page of [{type, oid, size, path, lfs?: {oid, size, pointerSize}}], with a
//           `Link: <next>; rel="next"` header while more remain (as the hub paginates)
//   GET /{org}/{name}/resolve/{rev}/{path}
//        -> small files inline; LFS files a 302 to the CDN (a second server, another
//           port: a different origin, like cdn-lfs.huggingface.co)
// and a plain file server for archives (/archives/NAME). Both honour Range (206 with
// Content-Range). A token, when set, is required on every hub request (401 otherwise,
// as the hub answers for private repositories). Faults are injected per test:
// `faults.drop[path] = {after: N, times: K}` cuts the connection after N body bytes,
// `faults.corrupt[path] = true` flips one byte (same size), `faults.apiFailures = N`
// answers the next N API requests with 503, `faults.ignoreRange[path] = true` answers a
// Range request with the whole body (200), as servers without Range support do. `log` records every request
// (server, url, authorization, range).
import crypto from 'node:crypto';
import http from 'node:http';

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');
const gitOid = (b) =>
  crypto.createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${b.length}\0`), b])).digest('hex');

// repos: {"org/name": {revisions: {main: sha}, files: {path: Buffer}, lfs: Set(paths)}}
export async function startHub({ repos, archives = {}, token = '', pageSize = 3 }) {
  const log = [];
  const faults = { drop: {}, corrupt: {}, apiFailures: 0, ignoreRange: {} };
  let cdnOrigin = '';

  function sendBody(req, res, key, body, extraHeaders = {}) {
    let data = body;
    if (faults.corrupt[key]) {
      data = Buffer.from(body);
      data[data.length >> 1] ^= 0xff;
    }
    let start = 0;
    const range = faults.ignoreRange[key] ? undefined : req.headers.range;
    if (range) {
      const m = /^bytes=(\d+)-$/.exec(range);
      if (!m || Number(m[1]) >= data.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${data.length}` });
        return res.end();
      }
      start = Number(m[1]);
    }
    const slice = data.subarray(start);
    const headers = { 'Content-Length': slice.length, 'Accept-Ranges': 'bytes', ...extraHeaders };
    if (range) headers['Content-Range'] = `bytes ${start}-${data.length - 1}/${data.length}`;
    res.writeHead(range ? 206 : 200, headers);
    const drop = faults.drop[key];
    if (drop && drop.times > 0 && slice.length > drop.after) {
      drop.times -= 1;
      res.write(slice.subarray(0, drop.after), () => setTimeout(() => res.socket.destroy(), 20));
      return;
    }
    res.end(slice);
  }

  function record(server, req) {
    log.push({ server, url: req.url, authorization: req.headers.authorization || '',
               range: req.headers.range || '' });
  }

  const hub = http.createServer((req, res) => {
    record('hub', req);
    const url = new URL(req.url, 'http://x');
    const json = (status, obj, headers = {}) => {
      const body = Buffer.from(JSON.stringify(obj));
      res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length, ...headers });
      res.end(body);
    };
    if (url.pathname.startsWith('/archives/')) {
      const name = decodeURIComponent(url.pathname.slice('/archives/'.length));
      if (!(name in archives)) return json(404, { error: 'Entry not found' });
      return sendBody(req, res, `archive:${name}`, archives[name]);
    }
    if (token && req.headers.authorization !== `Bearer ${token}`) {
      return json(401, { error: 'Invalid credentials in Authorization header' });
    }
    let m = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)$/.exec(url.pathname);
    if (m && faults.apiFailures > 0) {
      faults.apiFailures -= 1;
      return json(503, { error: 'Service Unavailable' });
    }
    if (m) {
      const [, repoId, kind, revEnc] = m;
      const repo = repos[repoId];
      if (!repo) return json(404, { error: 'Repository not found' });
      const rev = decodeURIComponent(revEnc);
      const sha = repo.revisions[rev] || (Object.values(repo.revisions).includes(rev) ? rev : null);
      if (!sha) return json(404, { error: `Invalid rev id: ${rev}` });
      if (kind === 'revision') {
        return json(200, { _id: 'x', id: repoId, sha,
                           siblings: Object.keys(repo.files).map((rfilename) => ({ rfilename })) });
      }
      const entries = [];
      const dirs = new Set();
      for (const [path, body] of Object.entries(repo.files)) {
        const parts = path.split('/');
        for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join('/'));
        const e = { type: 'file', oid: gitOid(body), size: body.length, path };
        if (repo.lfs.has(path)) e.lfs = { oid: sha256(body), size: body.length, pointerSize: 134 };
        entries.push(e);
      }
      for (const d of dirs) entries.push({ type: 'directory', oid: '0'.repeat(40), size: 0, path: d });
      const cursor = Number(url.searchParams.get('cursor') || 0);
      const page = entries.slice(cursor, cursor + pageSize);
      const headers = {};
      if (cursor + pageSize < entries.length) {
        const next = new URL(req.url, `http://${req.headers.host}`);
        next.searchParams.set('cursor', String(cursor + pageSize));
        headers.Link = `<${next.href}>; rel="next"`;
      }
      return json(200, page, headers);
    }
    m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (m) {
      const [, repoId, rev, pathEnc] = m;
      const repo = repos[repoId];
      const path = pathEnc.split('/').map(decodeURIComponent).join('/');
      if (!repo || !Object.values(repo.revisions).includes(rev) || !(path in repo.files)) {
        return json(404, { error: 'Entry not found' });
      }
      const key = `${repoId}/${path}`;
      if (repo.lfs.has(path)) {
        res.writeHead(302, { Location: `${cdnOrigin}/blob/${encodeURIComponent(key)}?X-Amz-Signature=abc`,
                             'X-Repo-Commit': rev, 'Content-Length': 0 });
        return res.end();
      }
      return sendBody(req, res, key, repo.files[path], { 'X-Repo-Commit': rev });
    }
    json(404, { error: 'not found' });
  });

  const cdn = http.createServer((req, res) => {
    record('cdn', req);
    const url = new URL(req.url, 'http://x');
    const key = decodeURIComponent(url.pathname.slice('/blob/'.length));
    const [org, name, ...rest] = key.split('/');
    const repo = repos[`${org}/${name}`];
    const path = rest.join('/');
    if (!repo || !(path in repo.files)) {
      res.writeHead(404);
      return res.end();
    }
    sendBody(req, res, key, repo.files[path]);
  });

  const listen = (s) => new Promise((r) => s.listen(0, '127.0.0.1', () => r(s.address().port)));
  const hubPort = await listen(hub);
  const cdnPort = await listen(cdn);
  cdnOrigin = `http://127.0.0.1:${cdnPort}`;
  return {
    endpoint: `http://127.0.0.1:${hubPort}`,
    cdnOrigin,
    log,
    faults,
    reset() {
      log.length = 0;
      faults.drop = {};
      faults.corrupt = {};
      faults.apiFailures = 0;
      faults.ignoreRange = {};
    },
    close() {
      hub.closeAllConnections();
      cdn.closeAllConnections();
      return Promise.all([new Promise((r) => hub.close(r)), new Promise((r) => cdn.close(r))]);
    },
  };
}

export { sha256 };
