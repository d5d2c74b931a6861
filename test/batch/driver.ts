import { type ChildProcess, spawn } from 'node:child_process';
import { after } from 'node:test';
import { asUser, type TestUser } from '../helpers/users.js';

const DRIVER = new URL('../fixtures/batch/client-driver.ts', import.meta.url).pathname;

/** What the driver answers; values use null for NaN. */
export interface DriverAnswer {
  ok?: boolean;
  values?: (number | null)[];
  error?: string;
  code?: string;
  pid?: number;
  uid?: number;
  native?: boolean;
  koffi?: boolean;
}

/** A batch client process running as `user`, commanded line by line (client-driver.ts). */
export class ClientDriver {
  private lines: string[] = [];
  private waiters: ((line: string) => void)[] = [];
  readonly exit: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    readonly pid: number,
  ) {
    this.exit = new Promise((resolve) => child.on('exit', () => resolve()));
  }

  static async start(user: TestUser): Promise<ClientDriver> {
    const child = spawn(
      asUser(user)[0]!,
      [...asUser(user).slice(1), process.execPath, '--import', 'tsx', DRIVER],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    after(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    let buffered = '';
    let driver: ClientDriver | undefined;
    const first = new Promise<DriverAnswer>((resolve) => {
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (text: string) => {
        buffered += text;
        let nl = buffered.indexOf('\n');
        while (nl >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!driver) resolve(JSON.parse(line) as DriverAnswer);
          else driver.push(line);
          nl = buffered.indexOf('\n');
        }
      });
    });
    const hello = await first;
    if (hello.uid !== user.uid) throw new Error(`driver runs as uid ${hello.uid}, expected ${user.uid}`);
    driver = new ClientDriver(child, hello.pid!);
    return driver;
  }

  private push(line: string): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(line);
    else this.lines.push(line);
  }

  /** Sends one command and waits for its answer. */
  async send(command: string): Promise<DriverAnswer> {
    const answer = new Promise<string>((resolve) => {
      const line = this.lines.shift();
      if (line !== undefined) resolve(line);
      else this.waiters.push(resolve);
    });
    this.child.stdin!.write(`${command}\n`);
    return JSON.parse(await answer) as DriverAnswer;
  }

  async kill(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exit;
  }
}
