/**
 * `--web.config.file`: TLS and basic auth for the exporter, in the file format of Prometheus's
 * exporter-toolkit (the flag node_exporter and Kepler take), so one file and one habit serve
 * every exporter of a node (docs/exporter.md, "TLS and basic auth"). Parsed with `yaml`,
 * checked with zod; a problem is one line that names the file.
 */

import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { dirname, resolve } from 'node:path';
import { createSecureContext, type SecureVersion, type TLSSocket } from 'node:tls';
import { compare } from 'bcryptjs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { errorMessage, InvalidArgumentError } from '../../platform/errors.js';

/** exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType names). */
export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

/** exporter-toolkit's TLS version names → Node's. */
const TLS_VERSIONS = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
} as const satisfies Record<string, SecureVersion>;
type TlsVersionName = keyof typeof TLS_VERSIONS;

/** A bcrypt hash as htpasswd -B, Go's bcrypt and bcryptjs write it ($2a$/$2b$/$2y$, cost 4–31). */
const BCRYPT_HASH = /^\$2[aby]?\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/;

const tlsVersion = z.enum(Object.keys(TLS_VERSIONS) as [TlsVersionName, ...TlsVersionName[]]);

const WEB_CONFIG = z
  .strictObject({
    tls_server_config: z
      .strictObject({
        cert_file: z.string().min(1),
        key_file: z.string().min(1),
        client_auth_type: z.enum(CLIENT_AUTH_TYPES).optional(),
        client_ca_file: z.string().min(1).optional(),
        min_version: tlsVersion.optional(),
        max_version: tlsVersion.optional(),
      })
      .optional(),
    basic_auth_users: z
      .record(
        z.string(),
        z
          .string()
          .regex(BCRYPT_HASH, 'expected a bcrypt hash ($2a$, $2b$ or $2y$, e.g. from htpasswd -nBC 10)'),
      )
      .optional(),
  })
  .nullable();

/** The file's settings, checked (paths as written; relative ones are to the file's directory). */
export interface WebConfigFile {
  tls?: {
    certFile: string;
    keyFile: string;
    clientAuth: ClientAuthType;
    clientCaFile?: string;
    minVersion: SecureVersion;
    maxVersion?: SecureVersion;
  };
  /** User → bcrypt hash. */
  users?: ReadonlyMap<string, string>;
}

/** One line, with its start, for a message that must stay one line. */
function oneLine(text: string): string {
  return text.split('\n')[0]!.trim().replace(/:$/, '');
}

/** Where a zod issue is, in the file's words ("tls_server_config.cert_file"). */
function issueLine(issue: z.core.$ZodIssue, doc: unknown): string {
  const where = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => `"${k}"`).join(', ');
    return `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys}${where === '' ? '' : ` in ${where}`}`;
  }
  if (issue.code === 'invalid_type' && !present(doc, issue.path)) return `${where}: missing`;
  if (issue.code === 'invalid_value' && issue.path.at(-1) === 'client_auth_type')
    return `${where}: expected one of ${CLIENT_AUTH_TYPES.join(', ')}`;
  if (issue.code === 'invalid_value' && /_version$/.test(String(issue.path.at(-1))))
    return `${where}: expected one of ${Object.keys(TLS_VERSIONS).join(', ')}`;
  return `${where === '' ? 'the file' : where}: ${oneLine(issue.message)}`;
}

/** Whether the document has a value at `path` (zod does not keep the input it refused). */
function present(doc: unknown, path: readonly PropertyKey[]): boolean {
  let at: unknown = doc;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, key)) return false;
    at = (at as Record<PropertyKey, unknown>)[key];
  }
  return at !== undefined;
}

/** A web config file's text → its settings, or one clear error naming `file`. */
export function parseWebConfig(text: string, file: string): WebConfigFile {
  const fail = (problem: string) => new InvalidArgumentError(`--web.config.file ${file}: ${problem}`);
  let doc: unknown;
  try {
    doc = parseYaml(text, { prettyErrors: true });
  } catch (err) {
    throw fail(`not valid YAML: ${oneLine(errorMessage(err))}`);
  }
  const checked = WEB_CONFIG.safeParse(doc);
  if (!checked.success) throw fail(issueLine(checked.error.issues[0]!, doc));
  const config = checked.data ?? {};
  const out: WebConfigFile = {};
  const t = config.tls_server_config;
  if (t !== undefined) {
    const clientAuth = t.client_auth_type ?? 'NoClientCert';
    const verifies = clientAuth === 'VerifyClientCertIfGiven' || clientAuth === 'RequireAndVerifyClientCert';
    if (verifies && t.client_ca_file === undefined)
      throw fail(`tls_server_config: client_auth_type ${clientAuth} needs client_ca_file`);
    if (!verifies && t.client_ca_file !== undefined)
      throw fail(
        `tls_server_config: client_ca_file is set but client_auth_type ${clientAuth} does not verify client certificates`,
      );
    const minVersion = TLS_VERSIONS[t.min_version ?? 'TLS12'];
    const maxVersion = t.max_version && TLS_VERSIONS[t.max_version];
    if (maxVersion !== undefined && maxVersion < minVersion)
      throw fail(
        `tls_server_config: max_version ${t.max_version} is below min_version ${t.min_version ?? 'TLS12'}`,
      );
    out.tls = {
      certFile: t.cert_file,
      keyFile: t.key_file,
      clientAuth,
      minVersion,
      ...(t.client_ca_file === undefined ? {} : { clientCaFile: t.client_ca_file }),
      ...(maxVersion === undefined ? {} : { maxVersion }),
    };
  }
  for (const user of Object.keys(config.basic_auth_users ?? {}))
    if (user === '' || user.includes(':'))
      throw fail(
        `basic_auth_users: user "${user}": a user name may not be empty or hold ":" (basic auth splits there)`,
      );
  if (config.basic_auth_users !== undefined && Object.keys(config.basic_auth_users).length > 0)
    out.users = new Map(Object.entries(config.basic_auth_users));
  return out;
}

/** What the server needs to serve as the file says: node:https options and the users' check. */
export interface WebServing {
  tls?: {
    cert: Buffer;
    key: Buffer;
    ca?: Buffer;
    requestCert: boolean;
    rejectUnauthorized: boolean;
    minVersion: SecureVersion;
    maxVersion?: SecureVersion;
  };
  /** Client certificates the TLS handshake lets through but the policy refuses (checked per request). */
  clientAuth: ClientAuthType;
  auth?: BasicAuth;
  /** One line for the start-up log: what is on. */
  summary: string;
}

/** Reads a web config file and the files it names; any problem is one clear error naming the file. */
export function loadWebConfig(file: string): WebServing {
  const fail = (problem: string) => new InvalidArgumentError(`--web.config.file ${file}: ${problem}`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw fail(`cannot read it: ${oneLine(errorMessage(err))}`);
  }
  const config = parseWebConfig(text, file);
  const parts: string[] = [];
  const serving: WebServing = { clientAuth: 'NoClientCert', summary: '' };
  if (config.tls) {
    const t = config.tls;
    const read = (key: string, path: string): Buffer => {
      try {
        return readFileSync(resolve(dirname(file), path));
      } catch (err) {
        throw fail(`tls_server_config.${key} ${path}: ${oneLine(errorMessage(err))}`);
      }
    };
    const cert = read('cert_file', t.certFile);
    const key = read('key_file', t.keyFile);
    const ca = t.clientCaFile === undefined ? undefined : read('client_ca_file', t.clientCaFile);
    try {
      // The handshake's own check, once at start: PEM that does not parse, a key of another cert.
      createSecureContext({ cert, key, ...(ca ? { ca } : {}) });
    } catch (err) {
      throw fail(
        `tls_server_config: cert_file ${t.certFile} and key_file ${t.keyFile} cannot be used together` +
          `${ca ? ` (with client_ca_file ${t.clientCaFile})` : ''}: ${oneLine(errorMessage(err))}`,
      );
    }
    serving.tls = {
      cert,
      key,
      ...(ca ? { ca } : {}),
      requestCert: t.clientAuth !== 'NoClientCert',
      rejectUnauthorized: t.clientAuth === 'RequireAndVerifyClientCert',
      minVersion: t.minVersion,
      ...(t.maxVersion ? { maxVersion: t.maxVersion } : {}),
    };
    serving.clientAuth = t.clientAuth;
    parts.push(`TLS (min ${t.minVersion}, client certificates: ${t.clientAuth})`);
  }
  if (config.users) {
    serving.auth = new BasicAuth(config.users);
    parts.push(`basic auth for ${config.users.size} user${config.users.size === 1 ? '' : 's'}`);
  }
  serving.summary = `${file}: ${parts.length === 0 ? 'neither TLS nor basic auth' : parts.join(', ')}`;
  return serving;
}

/** Whether a request's client certificate passes a policy the handshake alone does not enforce. */
export function clientCertAllowed(socket: TLSSocket, policy: ClientAuthType): boolean {
  if (policy !== 'RequireAnyClientCert' && policy !== 'VerifyClientCertIfGiven') return true;
  const given = Object.keys(socket.getPeerCertificate() ?? {}).length > 0;
  if (policy === 'RequireAnyClientCert') return given;
  return !given || socket.authorized;
}

/** Successful verifications kept, at most: a scraper or two, a few users. */
const VERIFIED_MAX = 64;
/**
 * bcrypt comparisons running at once, at most. A stranger's every guess costs a full comparison,
 * so a flood of them would take the exporter's CPU; past this bound a guess is refused without
 * one (a known scraper's credentials are remembered and never need one).
 */
export const VERIFYING_MAX = 4;

/**
 * HTTP basic auth against bcrypt hashes. bcrypt is slow by design (cost 10: ~50–100 ms in JS), so
 * a (user, password) that verified is remembered, keyed by an HMAC under a key of this process
 * (no password kept in the clear), in a small map of the most recent ones; a failure is never
 * remembered, so nothing a stranger sends grows it.
 */
export class BasicAuth {
  private readonly verified = new Map<string, true>();
  private verifying = 0;
  private readonly secret = randomBytes(32);
  /** A hash to compare unknown users against, so their answer takes as long as a known user's. */
  private readonly decoy: string;

  constructor(private readonly users: ReadonlyMap<string, string>) {
    this.decoy = users.values().next().value ?? '';
  }

  /** Whether the request's Authorization header names a user with the right password. */
  async allows(headers: IncomingHttpHeaders): Promise<boolean> {
    const credentials = parseBasicAuth(headers.authorization);
    if (credentials === undefined) return false;
    const { user, password } = credentials;
    const hash = this.users.get(user);
    const key = createHmac('sha256', this.secret)
      .update(`${user}\0${password}\0${hash ?? ''}`)
      .digest('base64');
    if (hash !== undefined && this.verified.has(key)) {
      this.verified.delete(key); // most recent last: the oldest goes first when full
      this.verified.set(key, true);
      return true;
    }
    if (this.verifying >= VERIFYING_MAX) return false;
    this.verifying++;
    const ok = await compare(password, hash ?? this.decoy)
      .catch(() => false)
      .finally(() => this.verifying--);
    if (!ok || hash === undefined) return false;
    if (this.verified.size >= VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(key, true);
    return true;
  }

  /** How many verifications are remembered (tests). */
  get remembered(): number {
    return this.verified.size;
  }
}

/** An Authorization header's basic credentials; undefined when it is absent or malformed. */
export function parseBasicAuth(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header ?? '');
  if (!m || m[1]!.length % 4 !== 0) return undefined;
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1]!, 'base64'));
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
