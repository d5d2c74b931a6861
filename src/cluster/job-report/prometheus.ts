import { errorMessage, InvalidArgumentError, JoulegateError } from '../../platform/errors.js';
import type { CounterSample } from './counter-window.js';

/** One series of a range-vector result: its labels and raw samples. */
export interface RangeSeries {
  labels: Record<string, string>;
  samples: CounterSample[];
}

interface ApiResponse {
  status: 'success' | 'error';
  error?: string;
  errorType?: string;
  data?: { resultType: string; result: { metric: Record<string, string>; values?: [number, string][] }[] };
}

/** A base URL a user gave ("http://prom:9090", a path prefix allowed), checked once. */
export function prometheusUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new InvalidArgumentError(`--prometheus "${text}": not a URL (e.g. http://prometheus:9090)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError(`--prometheus "${text}": only http and https are supported`);
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** Escapes a string for a PromQL regex matcher inside double quotes. */
export function promqlRegexLiteral(value: string): string {
  return value
    .replace(/[\\.+*?()|[\]{}^$]/g, '\\$&')
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"');
}

/** Prometheus's HTTP API, the one query the job report needs. */
export class PrometheusClient {
  constructor(
    private readonly base: URL,
    private readonly timeoutMs = 30_000,
  ) {}

  /** Raw samples of a range-vector expression (`metric[10m]`) evaluated at `time` (Unix s). */
  async rangeVector(expr: string, time: number): Promise<RangeSeries[]> {
    const url = new URL('api/v1/query', this.base);
    url.searchParams.set('query', expr);
    url.searchParams.set('time', time.toFixed(3));
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      throw new JoulegateError(`cannot reach Prometheus at ${this.base.href}: ${errorMessage(cause ?? err)}`);
    }
    let body: ApiResponse;
    try {
      body = (await res.json()) as ApiResponse;
    } catch {
      throw new JoulegateError(`Prometheus at ${this.base.href} answered HTTP ${res.status} without JSON`);
    }
    if (body.status !== 'success' || body.data === undefined) {
      throw new JoulegateError(
        `Prometheus refused the query (${body.errorType ?? res.status}): ${body.error ?? 'no reason'}`,
      );
    }
    if (body.data.resultType !== 'matrix') {
      throw new JoulegateError(`Prometheus answered a ${body.data.resultType}, not a range vector`);
    }
    return body.data.result.map((r) => ({
      labels: r.metric,
      samples: (r.values ?? []).map(([t, v]) => ({ t: Number(t), v: Number(v) })),
    }));
  }
}
