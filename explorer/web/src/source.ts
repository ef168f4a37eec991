// One live lineage query: its latest snapshot over an event stream
// (/api/lf/v1/watch), reconnecting when the stream fails, or by reading
// /api/lf/v1/lineage again every RETRY_MS when it has no stream.
import { ApiError, exact, exactIds, fetchLineage, lineageQuery, timeQuery } from './api';
import type { Lineage } from './api';
import { mark } from './hooks';
import { takeEarly } from './state';

const RETRY_MS = 2000;

export type SourceListener = () => void;

/** One watched lineage query: the centre, or an expanded node. */
export class Source {
  snapshot: Lineage | null = null;
  error: ApiError | null = null;
  private es: EventSource | null = null;
  private timer: number | undefined;
  private closed = false;
  private abort = new AbortController();

  constructor(
    readonly nodeId: string,
    readonly up: number,
    readonly down: number,
    readonly max: number,
    private readonly useSSE: boolean,
    private readonly changed: SourceListener,
    private readonly failed: (e: ApiError) => void,
    private readonly status: () => void,
  ) {}

  static keyOf(n: string, up: number, down: number, max: number): string {
    return up + '/' + down + '/' + max + '/' + timeQuery() + '/' + n;
  }
  get live(): boolean {
    return this.es !== null && this.es.readyState === EventSource.OPEN;
  }
  /** This source holds (or tries to hold) an event stream. */
  get streaming(): boolean {
    return this.useSSE && !this.closed;
  }

  start(): void {
    // The boot script may have started reading this query while the bundle
    // loaded: its answer is the first snapshot unless the stream is faster.
    const early = takeEarly(this.nodeId, this.up, this.down, this.max);
    const sse = this.useSSE && typeof EventSource !== 'undefined';
    if (early) {
      void early.then((l) => {
        mark('earlyAt');
        if (this.closed) return;
        if (l && !this.snapshot && !this.error) this.accept(l);
        if (!sse) {
          if (!l) void this.fetchOnce(false);
          return;
        }
        // The stream's first event is the same snapshot again (for a big
        // neighbourhood, hundreds of KB to receive and parse on the main
        // thread): opened after the frame that draws the early answer, so
        // that it does not delay it. Every event is a whole snapshot:
        // nothing written meanwhile is missed.
        if (l) requestAnimationFrame(() => window.setTimeout(() => !this.closed && this.openSSE(), 0));
        else this.openSSE();
      });
      return;
    }
    if (sse) this.openSSE();
    else void this.fetchOnce(false);
  }

  close(): void {
    this.closed = true;
    this.abort.abort();
    if (this.es) this.es.close();
    this.es = null;
    window.clearTimeout(this.timer);
  }

  private openSSE(): void {
    const es = new EventSource('/api/lf/v1/watch?' + lineageQuery(exact(this.nodeId), this.up, this.down, this.max));
    this.es = es;
    // The first event may repeat the snapshot of the boot script's read
    // (no render then): the status must still turn live.
    es.addEventListener('open', () => this.status());
    es.addEventListener('lineage', (ev) => {
      mark('sseAt');
      this.accept(JSON.parse((ev as MessageEvent).data) as Lineage);
      mark('sseParsedAt');
    });
    es.addEventListener('error', (ev) => this.onError(es, (ev as MessageEvent).data));
  }

  private onError(es: EventSource, data: unknown): void {
    if (this.closed) return;
    if (typeof data === 'string' && data !== '') {
      // The server's own `event: error` (the graph is down): the stream stays open.
      let cls = 'error';
      let msg = data;
      try {
        const j = JSON.parse(data);
        cls = j.error || cls;
        msg = j.message || msg;
      } catch {
        /* plain text */
      }
      this.fail(new ApiError(cls === 'graph_unreachable' ? 503 : 500, msg, cls));
      return;
    }
    if (es.readyState === EventSource.CLOSED) {
      // Refused (503, 404, not an event stream): ask /lineage what is wrong,
      // use its answer, and try the stream again later.
      this.es = null;
      void this.fetchOnce(true);
    } else {
      this.fail(new ApiError(0, 'the connection to the explorer server was lost; reconnecting'));
    }
  }

  private async fetchOnce(retrySSE: boolean): Promise<void> {
    try {
      this.accept(await fetchLineage(exact(this.nodeId), this.up, this.down, this.max, this.abort.signal));
    } catch (e) {
      if (this.closed || (e as Error).name === 'AbortError') return;
      this.fail(e instanceof ApiError ? e : new ApiError(0, String(e)));
    }
    if (this.closed) return;
    this.timer = window.setTimeout(() => {
      if (this.closed) return;
      if (retrySSE) this.openSSE();
      else void this.fetchOnce(false);
    }, RETRY_MS);
  }

  private accept(l: Lineage): void {
    if (this.closed) return;
    l = exactIds(l);
    const wasError = this.error !== null;
    this.error = null;
    if (!wasError && this.snapshot && this.snapshot.version === l.version && l.version) return;
    this.snapshot = l;
    this.changed();
  }

  private fail(e: ApiError): void {
    if (this.closed) return;
    this.error = e;
    this.failed(e);
  }
}
