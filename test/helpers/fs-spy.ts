import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';

/**
 * Records the first argument of every call to one node:fs function while `fn` runs, e.g. to
 * check that a batch reads /proc/stat once or writes each policy file once. The real function
 * still does the work. syncBuiltinESMExports makes modules that imported the function by name
 * see the wrapper too.
 */
export async function spyOnFs(
  name: 'openSync' | 'readSync' | 'readFileSync' | 'writeFileSync',
  fn: () => Promise<unknown>,
): Promise<unknown[]> {
  const original = fs[name] as (...args: unknown[]) => unknown;
  const calls: unknown[] = [];
  (fs as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
    calls.push(args[0]);
    return original(...args);
  };
  syncBuiltinESMExports();
  try {
    await fn();
  } finally {
    (fs as unknown as Record<string, unknown>)[name] = original;
    syncBuiltinESMExports();
  }
  return calls;
}
