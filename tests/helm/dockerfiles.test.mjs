// docker/*.Dockerfile pass the static checks of dockerfile_check.mjs (images cannot be
// built in CI), build what the chart and the controller run, and the checker itself
// catches what it should.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { checkDockerfile, stagesOf } from "./dockerfile_check.mjs";
import { ROOT } from "./lib.mjs";

const read = (f) => fs.readFileSync(path.join(ROOT, f), "utf8");
const DOCKERFILES = ["docker/orca.Dockerfile", "docker/orca-controller.Dockerfile"];

for (const f of DOCKERFILES) {
  test(`${f} passes the checks`, () => {
    assert.deepEqual(checkDockerfile(read(f)), []);
  });
}

function finalStage(f) {
  return stagesOf(read(f)).at(-1);
}
const runs = (stage) => stage.instructions.filter((i) => i.op === "RUN").map((i) => i.args).join("\n");

test("orca: CUDA runtime base, built with install-deps.sh + cmake (CUDA on), binary and libraries copied", () => {
  const stages = stagesOf(read("docker/orca.Dockerfile"));
  assert.match(stages[0].image, /^nvidia\/cuda:[\d.]+-devel-/);
  assert.match(stages.at(-1).image, /^nvidia\/cuda:[\d.]+-runtime-/);
  // Same CUDA version and OS in both stages.
  assert.equal(stages[0].image.replace("-devel-", "-runtime-"), stages.at(-1).image);
  assert.match(runs(stages[0]), /scripts\/install-deps\.sh/);
  // CUDA on by default; scripts/test-images.sh builds the CPU variant with WITH_CUDA=OFF.
  assert.match(runs(stages[0]), /-DORCA_WITH_CUDA=\$\{WITH_CUDA\}/);
  assert.equal(stages[0].args.get("WITH_CUDA"), "ON");
  assert.match(runs(stages[0]), /--target orca\b/);
  assert.match(runs(stages[0]), /collect-libs\.sh build\/engine\/cli\/orca/);
  const copies = stages.at(-1).instructions.filter((i) => i.op === "COPY").map((i) => i.args);
  assert.ok(copies.some((c) => /--from=build \/out\/bin\/orca \/usr\/local\/bin\/orca$/.test(c)));
  assert.ok(copies.some((c) => /--from=build \/out\/lib\/ /.test(c)));
  // `orca model pull` (the pull-model init container) verifies TLS against this bundle.
  assert.ok(copies.some((c) => /--from=build \/etc\/ssl\/certs\/ca-certificates\.crt \/etc\/ssl\/certs\/ca-certificates\.crt$/.test(c)));
});

test("orca-controller: minimal base, the binary on PATH as the chart runs it", () => {
  const stages = stagesOf(read("docker/orca-controller.Dockerfile"));
  assert.match(stages.at(-1).image, /-slim$/);
  assert.match(runs(stages[0]), /scripts\/install-deps\.sh/);
  assert.match(runs(stages[0]), /--target orca-controller\b/);
  assert.match(runs(stages[0]), /orca-controller version/, "the build smoke-runs the binary");
  const copies = stages.at(-1).instructions.filter((i) => i.op === "COPY").map((i) => i.args);
  assert.ok(copies.some((c) => c.endsWith("/usr/local/bin/orca-controller")));
  // The chart runs uid 65532 with runAsNonRoot; the image's USER agrees.
  const user = finalStage("docker/orca-controller.Dockerfile").instructions.filter((i) => i.op === "USER").at(-1).args;
  assert.equal(user, "65532:65532");
  const values = read("helm/orca/values.yaml");
  assert.match(values, /runAsUser: 65532/);
});

test("the binaries' paths exist in the build (CMake targets)", () => {
  assert.match(read("engine/cli/CMakeLists.txt"), /orca_cc_binary\(NAME orca\b/);
  assert.match(read("controller/CMakeLists.txt"), /orca_cc_binary\(NAME orca-controller\b/);
  // install-deps.sh skips npm without package.json, which the Dockerfiles do not copy.
  assert.match(read("scripts/install-deps.sh"), /if \[ -f package\.json \]/);
});

test(".dockerignore keeps credentials and build output out of the context", () => {
  const lines = read(".dockerignore").split("\n").map((l) => l.trim());
  for (const p of [".git", "build*/", "node_modules/", ".env", "**/*.pem", "**/*.key"]) assert.ok(lines.includes(p), `.dockerignore lacks ${p}`);
});

test("the checker rejects root users, floating tags, secrets, key files, single stages", () => {
  const bad = [
    "ARG BASE=ubuntu",
    "FROM ${BASE} AS build",
    "ENV API_TOKEN=abc123",
    "ARG HF_TOKEN=hf_xxx",
    "COPY id_rsa /root/.ssh/id_rsa",
    "ADD https://example.com/x.tgz /x",
    "FROM debian:latest",
    "COPY --from=build /x /x",
    "USER orca",
  ].join("\n");
  const problems = checkDockerfile(bad).join("\n");
  assert.match(problems, /base image ubuntu is not pinned/);
  assert.match(problems, /base image debian:latest is not pinned/);
  assert.match(problems, /latest tag/);
  assert.match(problems, /ENV API_TOKEN has a value/);
  assert.match(problems, /ARG HF_TOKEN has a value/);
  assert.match(problems, /COPY of a key or credentials file: id_rsa/);
  assert.match(problems, /ADD of a remote URL/);
  assert.match(problems, /final USER orca is not numeric/);
  assert.match(checkDockerfile("FROM debian:12.11\nUSER 0\n").join("\n"), /multi-stage[\s\S]*root \(uid 0\)/);
  assert.match(checkDockerfile("FROM debian:12.11 AS a\nFROM debian:12.11-slim\n").join("\n"), /sets no USER/);
  // An ARG without a value (supplied at build time) is fine; so is a pinned digest.
  assert.deepEqual(checkDockerfile(`ARG HF_TOKEN\nFROM debian@sha256:${"a".repeat(64)} AS a\nFROM debian:12.11-slim\nUSER 65532:65532\n`), []);
});
