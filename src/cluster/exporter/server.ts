import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { gzipSync } from 'node:zlib';
import { errorMessage } from '../../platform/errors.js';
import type { ConsumerEnergy } from './consumers.js';
import { CONTENT_TYPES, type Exposition, negotiateFormat } from './exposition.js';
import type { NodeSampler } from './node-metrics.js';
import { clientCertAllowed, type WebServing } from './web-config.js';

/** Whether an Accept-Encoding header takes gzip (Prometheus sends `gzip`); `gzip;q=0` refuses it. */
export function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding?.trim() !== 'gzip') return false;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    return q === undefined || Number(q) > 0;
  });
}

export interface ExporterParts {
  sampler: NodeSampler;
  exposition: Exposition;
  consumers?: ConsumerEnergy;
  /** Where one-line problems go (a failed read is logged once per distinct reason). */
  log: (line: string) => void;
  /** Called after each reading (the exporter saves its counters there). */
  afterRead?: () => void;
  /** TLS and basic auth (--web.config.file); undefined: plain HTTP, no auth. */
  web?: WebServing;
}

/**
 * Serves /metrics: each scrape takes one batch read of the node, updates the metrics and renders
 * them. Scrapes run one at a time (two scrapers at once each get a whole, consistent reading).
 */
export class ExporterServer {
  private readonly server: Server;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly logged = new Set<string>();

  constructor(private readonly parts: ExporterParts) {
    const web = parts.web;
    const handle = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    if (web === undefined) {
      this.server = createServer(handle);
      return;
    }
    const guarded = (req: IncomingMessage, res: ServerResponse) => {
      if (web.tls && !clientCertAllowed(req.socket as TLSSocket, web.clientAuth)) {
        res.writeHead(403, { 'Content-Type': 'text/plain', Connection: 'close' }).end('Forbidden\n');
        return;
      }
      if (web.auth === undefined) return handle(req, res);
      web.auth.allows(req.headers).then(
        (ok) => {
          if (ok) return handle(req, res);
          res.writeHead(401, {
            'Content-Type': 'text/plain; charset=utf-8',
            'WWW-Authenticate': 'Basic realm="joulegate"',
          });
          res.end('Unauthorized\n');
        },
        () => res.writeHead(500).end(),
      );
    };
    this.server = web.tls ? createHttpsServer(web.tls, guarded) : createServer(guarded);
  }

  /** Whether it serves HTTPS. */
  get tls(): boolean {
    return this.parts.web?.tls !== undefined;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<html><body><h1>joulegate exporter</h1><p><a href="/metrics">metrics</a></p></body></html>\n');
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: the metrics are at /metrics\n');
      return;
    }
    const format = negotiateFormat(req.headers.accept);
    const scrape = this.queue.then(() => this.scrape(format));
    this.queue = scrape.catch(() => undefined);
    scrape.then(
      (body) => {
        const headers = { 'Content-Type': CONTENT_TYPES[format], Vary: 'Accept-Encoding' };
        if (acceptsGzip(req.headers['accept-encoding'])) {
          res.writeHead(200, { ...headers, 'Content-Encoding': 'gzip' });
          res.end(req.method === 'HEAD' ? undefined : gzipSync(body));
        } else {
          res.writeHead(200, headers);
          res.end(req.method === 'HEAD' ? undefined : body);
        }
      },
      (err) => {
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`scrape failed: ${errorMessage(err)}\n`);
      },
    );
  }

  private async scrape(format: 'text' | 'openmetrics'): Promise<string> {
    const { sampler, exposition, consumers } = this.parts;
    const sample = await sampler.read();
    this.parts.afterRead?.();
    for (const note of sample.notes) this.logOnce(note);
    for (const f of sample.failures) this.logOnce(`${f.channel.rule.metric}: ${f.reason}`);
    let consumerScrape: ReturnType<ConsumerEnergy['update']> | undefined;
    if (consumers !== undefined) {
      consumerScrape = consumers.update(sample);
      for (const p of consumerScrape.problems) this.logOnce(`attribution: ${p}`);
    }
    exposition.update(sample, consumers && consumerScrape && { energy: consumers, scrape: consumerScrape });
    return exposition.render(format);
  }

  private logOnce(line: string): void {
    if (this.logged.has(line) || this.logged.size > 1000) return;
    this.logged.add(line);
    this.parts.log(`joulegate exporter: ${line}`);
  }

  /** Starts listening; resolves with the bound address ("127.0.0.1:9863"). */
  listen(host: string, port: number): Promise<string> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        const a = this.server.address() as AddressInfo;
        resolve(a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
