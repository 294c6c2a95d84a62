// Static checks of a Dockerfile (there is no Docker engine in CI to build images):
// multi-stage, every base image pinned to a version tag or digest (no `latest`), the
// final stage runs as a numeric non-root user, no secrets in ENV/ARG, no key files
// copied in, no remote ADD.
//
//   checkDockerfile(text) -> [problem, ...]   (empty when the file passes)

const SECRET_NAME = /(KEY|TOKEN|PASSWORD|PASSWD|SECRET|CREDENTIAL)/i;
const KEY_FILE = /(\.pem|\.key|\.p12|\.pfx|id_rsa|id_ed25519|\.env|kubeconfig|\.npmrc|\.netrc|credentials)(\s|$|\/)/i;

// Returns the instructions [{op, args, line}] with continuation lines joined and
// comments dropped.
export function parseDockerfile(text) {
  const out = [];
  let buf = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!buf && (line === "" || line.startsWith("#"))) return;
    if (buf && line.startsWith("#")) return;
    if (!buf) start = i + 1;
    buf += (buf ? " " : "") + line.replace(/\\$/, "").trim();
    if (!line.endsWith("\\")) {
      const [op, ...rest] = buf.split(/\s+/);
      out.push({ op: op.toUpperCase(), args: rest.join(" "), line: start });
      buf = "";
    }
  });
  return out;
}

// Returns KEY=VALUE pairs of an ENV/ARG/LABEL instruction (also the `ENV KEY VALUE` form).
function pairs(args) {
  if (!args.includes("=")) {
    const [k, ...v] = args.split(/\s+/);
    return [[k, v.join(" ")]];
  }
  return [...args.matchAll(/([\w.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)].map((m) => [m[1], m[2].replace(/^"|"$/g, "")]);
}

export function checkDockerfile(text) {
  const problems = [];
  const ins = parseDockerfile(text);
  const args = new Map();
  const stages = [];
  for (const i of ins) {
    const where = `line ${i.line}`;
    if (i.op === "ARG") {
      for (const [k, v] of pairs(i.args)) {
        if (!stages.length) args.set(k, v);
        if (SECRET_NAME.test(k) && v) problems.push(`${where}: ARG ${k} has a value; secrets must not be baked into images`);
      }
    } else if (i.op === "FROM") {
      const words = i.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      const image = words[0].replace(/\$\{?(\w+)\}?/g, (_, v) => args.get(v) ?? "");
      const name = words[1]?.toUpperCase() === "AS" ? words[2] : undefined;
      const earlier = stages.some((s) => s.name === image);
      if (!earlier) {
        const [ref, digest] = image.split("@");
        const tag = ref.includes(":") && !ref.endsWith("]") ? ref.slice(ref.lastIndexOf(":") + 1) : "";
        if (!digest && !/^[\w.-]*\d[\w.-]*$/.test(tag)) problems.push(`${where}: base image ${image} is not pinned to a version tag or digest`);
        if (tag === "latest") problems.push(`${where}: base image ${image} uses the latest tag`);
        if (digest && !/^sha256:[a-f0-9]{64}$/.test(digest)) problems.push(`${where}: malformed digest in ${image}`);
      }
      stages.push({ name, image, users: [], copies: [] });
    } else if (!stages.length) {
      problems.push(`${where}: ${i.op} before the first FROM`);
    } else if (i.op === "USER") {
      stages.at(-1).users.push({ user: i.args.trim(), where });
    } else if (i.op === "ENV") {
      for (const [k, v] of pairs(i.args)) {
        if (SECRET_NAME.test(k) && v) problems.push(`${where}: ENV ${k} has a value; secrets must not be baked into images`);
      }
    } else if (i.op === "COPY" || i.op === "ADD") {
      const words = i.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      for (const srcPath of words.slice(0, -1)) {
        if (KEY_FILE.test(`${srcPath} `)) problems.push(`${where}: ${i.op} of a key or credentials file: ${srcPath}`);
        if (i.op === "ADD" && /^(https?|git):/.test(srcPath)) problems.push(`${where}: ADD of a remote URL (${srcPath}); download in a RUN step with a checksum`);
      }
      stages.at(-1).copies.push(i.args);
    }
  }
  if (stages.length < 2) problems.push("not a multi-stage build (a build stage and a runtime stage)");
  const last = stages.at(-1);
  if (last) {
    const user = last.users.at(-1)?.user;
    if (!user) {
      problems.push("the final stage sets no USER: the image would run as root");
    } else {
      const [uid, gid] = user.split(":");
      if (!/^\d+$/.test(uid)) problems.push(`final USER ${user} is not numeric: Kubernetes runAsNonRoot cannot verify a user name`);
      else if (Number(uid) === 0) problems.push("final USER is root (uid 0)");
      if (gid !== undefined && (!/^\d+$/.test(gid) || Number(gid) === 0)) problems.push(`final USER ${user}: group must be a numeric non-root gid`);
    }
  }
  return problems;
}

// Returns the stages [{name, image, args, instructions}] (for tests): `image` with the
// ARG defaults declared before the first FROM substituted (what `docker build` uses
// without --build-arg), `args` the stage's own ARG defaults.
export function stagesOf(text) {
  const stages = [];
  const globals = new Map();
  for (const i of parseDockerfile(text)) {
    if (i.op === "FROM") {
      const words = i.args.split(/\s+/).filter((w) => !w.startsWith("--"));
      const image = words[0].replace(/\$\{?(\w+)\}?/g, (_, v) => globals.get(v) ?? "");
      stages.push({ image, name: words[1]?.toUpperCase() === "AS" ? words[2] : undefined, args: new Map(), instructions: [] });
    } else if (i.op === "ARG") {
      for (const [k, v] of pairs(i.args)) (stages.length ? stages.at(-1).args : globals).set(k, v);
      if (stages.length) stages.at(-1).instructions.push(i);
    } else if (stages.length) {
      stages.at(-1).instructions.push(i);
    }
  }
  return stages;
}
