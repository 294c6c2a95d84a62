// The soak's fault injector: at seeded intervals it picks a worker of `orca serve` (a
// child process, found through /proc) and
//   kill        SIGKILLs it: the supervisor must restart it and the group re-form;
//   stop_cont   SIGSTOPs it and SIGCONTs it before the rank deadline: the group may
//               stall, but must go on (or break and re-form, never hang);
//   stop_leave  SIGSTOPs it and leaves it: the scheduler must notice the silent rank
//               within the deadline and have the supervisor kill and restart it;
//   stop_late   SIGSTOPs it and SIGCONTs it just after the deadline, racing the restart.
// Before each fault it waits for the group to be ready again; a group that does not
// re-form, or a worker that is not replaced, is a problem (reported as a violation).
import { procStat, workersOf } from './observe.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class FaultInjector {
  // opts: { serverPid, rng, baseURL, rankDeadlineS, intervalS: [lo, hi], now(), kinds }
  constructor(opts) {
    Object.assign(this, opts);
    this.faults = [];    // { t, kind, rank, pid }
    this.problems = [];  // violations found while injecting
    this.stopped = new Set();  // pids we SIGSTOPped and have not seen end or continue
    this.running = false;
  }

  async ready() {
    try {
      return (await fetch(`${this.baseURL}/ready`, { signal: AbortSignal.timeout(2000) })).status === 200;
    } catch {
      return false;
    }
  }

  async waitReady(timeoutMs) {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end && this.running) {
      if (await this.ready()) return true;
      await sleep(200);
    }
    return !this.running || await this.ready();
  }

  // Waits until worker `rank` runs with a pid other than `pid`; false after `timeoutMs`.
  async waitReplaced(rank, pid, timeoutMs) {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const w = workersOf(this.serverPid).find((x) => x.rank === rank);
      if (w && w.pid !== pid) return true;
      await sleep(100);
    }
    return false;
  }

  isOurStoppedChild(pid) {
    const st = procStat(pid);
    return st !== null && st.ppid === this.serverPid && st.state === 'T';
  }

  signal(pid, sig) {
    try {
      process.kill(pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  // Returns the next fault kind: every kind once per round, in a seeded order.
  nextKind() {
    if (!this.round?.length) {
      this.round = [...this.kinds];
      for (let i = this.round.length - 1; i > 0; i--) {
        const j = this.rng.int(0, i);
        [this.round[i], this.round[j]] = [this.round[j], this.round[i]];
      }
    }
    return this.round.pop();
  }

  // Injects faults until stop() or `untilMs` (this.now() time).
  async run(untilMs) {
    this.running = true;
    const deadlineMs = this.rankDeadlineS * 1000;
    while (this.running) {
      const gapEnd = Date.now() + this.rng.uniform(this.intervalS[0], this.intervalS[1]) * 1000;
      while (this.running && Date.now() < gapEnd) await sleep(Math.min(200, gapEnd - Date.now()));
      if (!this.running || this.now() >= untilMs) break;
      if (!(await this.waitReady(90000))) {
        this.problems.push(`t=${(this.now() / 1000).toFixed(1)} s: the group was not ready 90 s after the previous fault`);
        continue;
      }
      const workers = workersOf(this.serverPid).filter((w) => w.state !== 'T');
      if (workers.length === 0) continue;
      const w = this.rng.pick(workers);
      const kind = this.nextKind();
      this.faults.push({ t: this.now(), kind, rank: w.rank, pid: w.pid });
      if (kind === 'kill') {
        this.signal(w.pid, 'SIGKILL');
        if (!(await this.waitReplaced(w.rank, w.pid, 15000))) {
          this.problems.push(`worker ${w.rank} (pid ${w.pid}) was not restarted within 15 s of SIGKILL`);
        }
        continue;
      }
      this.signal(w.pid, 'SIGSTOP');
      this.stopped.add(w.pid);
      if (kind === 'stop_cont' || kind === 'stop_late') {
        const holdMs = kind === 'stop_cont' ? this.rng.uniform(0.2, 0.6) * deadlineMs : deadlineMs + this.rng.uniform(0, 1500);
        await sleep(holdMs);
        if (this.isOurStoppedChild(w.pid)) this.signal(w.pid, 'SIGCONT');
        this.stopped.delete(w.pid);
        continue;
      }
      // stop_leave: the scheduler must find the silent rank and have it killed.
      if (!(await this.waitReplaced(w.rank, w.pid, deadlineMs + 15000))) {
        this.problems.push(`worker ${w.rank} (pid ${w.pid}), SIGSTOPped and left, was not replaced within ` +
                           `the rank deadline + 15 s`);
      }
      this.stopped.delete(w.pid);
    }
  }

  // Stops injecting; continues any worker still stopped by us (a problem if the
  // supervisor should have replaced it).
  stop() {
    this.running = false;
    for (const pid of this.stopped) {
      if (this.isOurStoppedChild(pid)) this.signal(pid, 'SIGCONT');
    }
    this.stopped.clear();
  }

  // Counts the faults by kind.
  counts() {
    const c = {};
    for (const f of this.faults) c[f.kind] = (c[f.kind] ?? 0) + 1;
    return c;
  }
}
