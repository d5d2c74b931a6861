import { type ChildProcess, spawn } from 'node:child_process';

const FIXTURES = new URL('../fixtures/batch/', import.meta.url).pathname;
export const START_CLIENT = `${FIXTURES}start-client.mjs`;
export const OPEN_PROBE = `${FIXTURES}open-probe.mjs`;

/** A process driven line by line: commands on stdin, one JSON object per stdout line. */
export class LineProcess {
  private readonly lines: string[] = [];
  private readonly waiters: ((line: string | undefined) => void)[] = [];
  private stderr = '';
  private ended = false;
  readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    let partial = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (text: string) => {
      partial += text;
      for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => {
      this.stderr += text;
    });
    child.stdin!.on('error', () => {});
    this.exited = new Promise((resolve) =>
      child.on('exit', (code) => {
        this.ended = true;
        for (const w of this.waiters.splice(0)) w(undefined);
        resolve(code);
      }),
    );
  }

  /** Runs `script` under `node` after `prefix` (e.g. a user switch and env). */
  static start(prefix: string[], script: string, args: string[] = []): LineProcess {
    return LineProcess.exec([...prefix, process.execPath, script, ...args]);
  }

  /** Runs `words` (a program and its arguments, e.g. after a user switch) as is. */
  static exec(words: string[]): LineProcess {
    return new LineProcess(spawn(words[0]!, words.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The next output line as an object; rejects if the process ends first. */
  async next<T = Record<string, unknown>>(): Promise<T> {
    const line =
      this.lines.shift() ??
      (this.ended ? undefined : await new Promise<string | undefined>((r) => this.waiters.push(r)));
    if (line === undefined) throw new Error(`process ${this.pid} ended: ${this.stderr}`);
    return JSON.parse(line) as T;
  }

  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  /** Closes stdin (the scripts then finish) and waits for the exit. */
  async end(): Promise<number | null> {
    this.child.stdin!.end();
    return this.exited;
  }
}

/** What start-client.mjs prints for each "go". */
export interface StartResult {
  ok: boolean;
  serverPid?: number;
  name?: string;
  message?: string;
  ms: number;
}
