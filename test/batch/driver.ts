import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { after } from 'node:test';
import type { BatchRequest } from '../../src/ipc/batch/protocol.js';
import type { BatchServerLauncher } from '../../src/service/batch-launcher.js';
import { tempDir } from '../helpers/tmp.js';
import { asUser, type TestUser } from '../helpers/users.js';

/** A run dir like /run/geopm: root-owned, 0711 (a client reaches its files by name only). */
export function batchRunDir(): string {
  const dir = tempDir('joulegate-batch-run-');
  chmodSync(dir, 0o711);
  return dir;
}

/** Starts a server of `launcher` for `client` (running as `user`) and admits it, as the daemon does once it has recorded it. */
export async function startServerFor(
  launcher: BatchServerLauncher,
  dir: string,
  client: ClientDriver,
  user: TestUser,
  signals: BatchRequest[],
  controls: BatchRequest[],
) {
  const server = await launcher.start({
    runDir: dir,
    clientPid: client.pid,
    clientUid: user.uid,
    clientGid: user.gid,
    signals,
    controls,
  });
  server.admit();
  return server;
}

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
