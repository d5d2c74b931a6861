import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Command } from 'commander';
import { register } from '../../../src/cli/commands/exporter.js';
import type { ExporterSettings } from '../../../src/cluster/exporter/settings.js';

/** The settings `joulegate exporter ARGS` would serve with, under `env` (the unit's /etc/default). */
async function settingsOf(args: string[], env: Record<string, string>): Promise<ExporterSettings> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    let got: ExporterSettings | undefined;
    const program = new Command();
    register(program, async (s) => {
      got = s;
    });
    await program.parseAsync(['node', 'joulegate', 'exporter', ...args]);
    assert.ok(got);
    return got;
  } finally {
    for (const k of Object.keys(env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

test('every setting comes from its variable when the flag is not given; a flag wins over it', async () => {
  const env = {
    JOULEGATE_EXPORTER_LISTEN: '10.0.0.5:9900',
    JOULEGATE_EXPORTER_NODE: 'n17',
    JOULEGATE_EXPORTER_CONSUMERS: 'system',
    JOULEGATE_EXPORTER_CGROUPS: ' machine.slice  /batch.slice ',
    JOULEGATE_EXPORTER_CONSUMER_EXPIRY: '60',
    JOULEGATE_EXPORTER_MAX_CONSUMERS: '7',
    JOULEGATE_EXPORTER_STATE_DIR: 'none',
    JOULEGATE_EXPORTER_WEB_CONFIG_FILE: '/etc/joulegate/web.yml',
  };
  const s = await settingsOf([], env);
  assert.deepEqual(
    { ...s },
    {
      host: '10.0.0.5',
      port: 9900,
      node: 'n17',
      sources: ['system'],
      cgroups: ['machine.slice', '/batch.slice'],
      consumerExpiryS: 60,
      maxConsumers: 7,
      webConfigFile: '/etc/joulegate/web.yml',
    },
  );
  const flags = await settingsOf(['--node', 'cli', '--cgroup', 'a', 'b', '--max-consumers', '3'], env);
  assert.equal(flags.node, 'cli');
  assert.deepEqual(flags.cgroups, ['a', 'b']);
  assert.equal(flags.maxConsumers, 3);
});
