import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSync } from 'bcryptjs';
import {
  BasicAuth,
  parseBasicAuth,
  parseWebConfig,
  VERIFYING_MAX,
} from '../../../src/cluster/exporter/web-config.js';

const HASH = hashSync('secret', 4);
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** The one-line error parseWebConfig throws for `text`. */
function refusal(text: string): string {
  try {
    parseWebConfig(text, '/etc/jg/web.yml');
  } catch (err) {
    const message = (err as Error).message;
    assert.ok(!message.includes('\n'), `not one line: ${message}`);
    assert.ok(message.startsWith('--web.config.file /etc/jg/web.yml: '), message);
    return message;
  }
  assert.fail(`accepted: ${text}`);
}

describe('parseWebConfig (exporter-toolkit format)', () => {
  it('reads TLS and users, with exporter-toolkit defaults', () => {
    const config = parseWebConfig(
      `tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\nbasic_auth_users:\n  alice: '${HASH}'\n  "42": '${HASH}'\n`,
      'w.yml',
    );
    assert.deepEqual(config.tls, {
      certFile: 'c.pem',
      keyFile: 'k.pem',
      clientAuth: 'NoClientCert',
      minVersion: 'TLSv1.2',
    });
    assert.deepEqual([...(config.users ?? new Map()).keys()].sort(), ['42', 'alice']);
  });

  it('reads client certificates and versions', () => {
    const config = parseWebConfig(
      [
        'tls_server_config:',
        '  cert_file: c',
        '  key_file: k',
        '  client_auth_type: RequireAndVerifyClientCert',
        '  client_ca_file: ca',
        '  min_version: TLS13',
        '',
      ].join('\n'),
      'w.yml',
    );
    assert.equal(config.tls?.clientAuth, 'RequireAndVerifyClientCert');
    assert.equal(config.tls?.clientCaFile, 'ca');
    assert.equal(config.tls?.minVersion, 'TLSv1.3');
  });

  it('takes an empty file as neither TLS nor auth', () => {
    assert.deepEqual(parseWebConfig('', 'w.yml'), {});
    assert.deepEqual(parseWebConfig('# nothing\n', 'w.yml'), {});
    assert.deepEqual(parseWebConfig('basic_auth_users: {}\n', 'w.yml'), {});
  });

  it('refuses unknown keys, wrong types and bad values in one line', () => {
    assert.match(refusal('tls_config:\n  cert_file: c\n'), /unknown key "tls_config"/);
    assert.match(
      refusal('tls_server_config:\n  cert_file: c\n  key_file: k\n  ciphers: x\n'),
      /unknown key "ciphers" in tls_server_config/,
    );
    assert.match(refusal('tls_server_config:\n  cert_file: c\n'), /tls_server_config\.key_file: missing/);
    assert.match(refusal('tls_server_config:\n  cert_file: [c]\n  key_file: k\n'), /cert_file: .*string/i);
    assert.match(
      refusal('basic_auth_users:\n  alice: plain\n'),
      /basic_auth_users\.alice: expected a bcrypt hash/,
    );
    assert.match(refusal(`basic_auth_users:\n  alice: ${HASH.slice(0, -1)}\n`), /bcrypt hash/);
    assert.match(refusal('basic_auth_users:\n  alice: 5\n'), /basic_auth_users\.alice/);
    assert.match(refusal(`basic_auth_users:\n  "a:b": '${HASH}'\n`), /may not .*":"/);
    assert.match(refusal('- a\n- b\n'), /the file: .*object/i);
    assert.match(
      refusal('tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: Sometimes\n'),
      /client_auth_type: expected one of NoClientCert, .*RequireAndVerifyClientCert/,
    );
    assert.match(
      refusal('tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS14\n'),
      /min_version: expected one of TLS10, TLS11, TLS12, TLS13/,
    );
    assert.match(
      refusal(
        'tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n',
      ),
      /needs client_ca_file/,
    );
    assert.match(
      refusal('tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n'),
      /client_ca_file is set but client_auth_type NoClientCert/,
    );
    assert.match(
      refusal(
        'tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS13\n  max_version: TLS12\n',
      ),
      /max_version TLS12 is below min_version TLS13/,
    );
  });

  it('refuses YAML that does not parse, and duplicate keys', () => {
    assert.match(refusal('tls_server_config: [unclosed\n'), /not valid YAML: .*line 2/);
    assert.match(refusal('basic_auth_users: {}\nbasic_auth_users: {}\n'), /not valid YAML: .*unique/i);
  });
});

describe('basic auth', () => {
  it('parses well-formed headers only', () => {
    assert.deepEqual(parseBasicAuth(basic('alice', 'p:w')), { user: 'alice', password: 'p:w' });
    assert.deepEqual(parseBasicAuth(basic('alice', '')), { user: 'alice', password: '' });
    for (const bad of [
      undefined,
      '',
      'Basic',
      'Basic !!!!',
      'Bearer abc',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      `Basic ${Buffer.from(':nouser').toString('base64')}`,
      `Basic ${Buffer.from([0x61, 0x3a, 0xff, 0xfe]).toString('base64')}`, // not UTF-8
      'Basic YWxpY2U6c2VjcmV0x', // not whole base64
    ])
      assert.equal(parseBasicAuth(bad), undefined, String(bad));
  });

  it('checks passwords against bcrypt, remembering only successes, at most 64', async () => {
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    assert.equal(await auth.allows({ authorization: basic('alice', 'secret') }), true);
    assert.equal(auth.remembered, 1);
    assert.equal(await auth.allows({ authorization: basic('alice', 'secret') }), true);
    assert.equal(auth.remembered, 1);
    assert.equal(await auth.allows({ authorization: basic('alice', 'wrong') }), false);
    assert.equal(await auth.allows({ authorization: basic('bob', 'secret') }), false);
    assert.equal(await auth.allows({ authorization: 'Basic %%%' }), false);
    assert.equal(await auth.allows({}), false);
    assert.equal(auth.remembered, 1);
  });

  it('runs at most VERIFYING_MAX bcrypt comparisons at once: a flood of guesses is refused, not queued', async () => {
    const auth = new BasicAuth(new Map([['alice', HASH]]));
    const guesses = Array.from({ length: 3 * VERIFYING_MAX }, (_, i) =>
      auth.allows({ authorization: basic('alice', `guess${i}`) }),
    );
    // The right password while the comparisons are busy: refused too (the scraper retries).
    const during = auth.allows({ authorization: basic('alice', 'secret') });
    assert.deepEqual(
      await Promise.all(guesses),
      guesses.map(() => false),
    );
    assert.equal(await during, false);
    assert.equal(await auth.allows({ authorization: basic('alice', 'secret') }), true, 'once they are done');
  });

  it('bounds what it remembers', async () => {
    // Any password verifies against a hash of it; 70 users, each with its own.
    const users = new Map(Array.from({ length: 70 }, (_, i) => [`u${i}`, hashSync(`p${i}`, 4)] as const));
    const auth = new BasicAuth(users);
    for (let i = 0; i < 70; i++)
      assert.equal(await auth.allows({ authorization: basic(`u${i}`, `p${i}`) }), true);
    assert.equal(auth.remembered, 64);
    assert.equal(await auth.allows({ authorization: basic('u0', 'p0') }), true); // verified again
    assert.equal(auth.remembered, 64);
  });
});
