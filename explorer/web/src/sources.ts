// The view's live sources: the centre node with the chosen depths, plus one
// source (depth 1 up and down, 2 in the dataset-only view) per node the
// user expanded; and their union, the lineage the graph and list show.
import type { ApiError } from './api';
import type { LEdge, LNode } from './api';
import { Source } from './source';
import { centreDepths } from './state';
import type { ViewState } from './state';

const MAX_SSE = 4; // browsers allow 6 HTTP/1.1 connections per host

/** Counts of neighbours left out of a node's lineage, upstream and downstream. */
export interface More {
  up: number;
  down: number;
}

/** The union of the sources' latest snapshots. */
export interface Merged {
  nodes: Map<string, LNode>; // every node, in both views
  visN: Map<string, LNode>; // the nodes of the current view
  visE: Map<string, LEdge>; // its edges between visN
  more: Map<string, More>; // the smallest "more" of each node over the sources
  truncated: boolean;
  hidden: number; // edges the time filter hid (the most any source reports)
}

/** What the sources say together, for the status line. */
export interface SourcesStatus {
  count: number;
  loading: boolean; // one has neither a snapshot nor an error yet
  live: boolean; // all of them hold an open event stream
  err: ApiError | null; // the error of one of them, a graph error first
}

export interface SourceEvents {
  changed: () => void; // a snapshot changed
  failed: (e: ApiError) => void;
  status: () => void; // a stream opened
}

export class Sources {
  private all = new Map<string, Source>();

  constructor(private readonly on: SourceEvents) {}

  get size(): number {
    return this.all.size;
  }

  /** Opens the sources the state asks for (the first MAX_SSE as streams) and closes the others. */
  follow(s: ViewState): void {
    const want = new Map<string, [string, number, number]>();
    if (s.node) {
      // In the dataset-only view a depth step is dataset -> job -> dataset:
      // two hops of the graph.
      const k = s.ds ? 2 : 1;
      const [up, down] = centreDepths(s);
      want.set(Source.keyOf(s.node, up, down, s.max), [s.node, up, down]);
      for (const x of s.x) want.set(Source.keyOf(x, k, k, s.max), [x, k, k]);
    }
    for (const [k, src] of this.all) {
      if (!want.has(k)) {
        src.close();
        this.all.delete(k);
      }
    }
    let sse = 0;
    for (const src of this.all.values()) if (src.streaming) sse++;
    for (const [k, [n, up, down]] of want) {
      if (this.all.has(k)) continue;
      const src = new Source(n, up, down, s.max, sse < MAX_SSE, this.on.changed, this.on.failed, this.on.status);
      sse++;
      this.all.set(k, src);
      src.start();
    }
  }

  /** The exact id of the centre of s, once its source answered (null before). */
  centreOf(s: ViewState): string | null {
    if (!s.node) return null;
    const [up, down] = centreDepths(s);
    return this.all.get(Source.keyOf(s.node, up, down, s.max))?.snapshot?.center ?? null;
  }

  /** Every source has a snapshot. */
  allLoaded(): boolean {
    for (const s of this.all.values()) if (!s.snapshot) return false;
    return true;
  }

  /** The "more" counts of a node: the smallest over the sources that hold it. */
  moreOf(id: string): More {
    let up = Infinity;
    let down = Infinity;
    for (const s of this.all.values()) {
      const n = s.snapshot?.nodes.find((x) => x.id === id);
      if (!n) continue;
      up = Math.min(up, n.more?.up ?? 0);
      down = Math.min(down, n.more?.down ?? 0);
    }
    return { up: isFinite(up) ? up : 0, down: isFinite(down) ? down : 0 };
  }

  /** The union of the snapshots; ds: the dataset-only view (datasets and DERIVES edges). */
  merge(ds: boolean): Merged {
    const nodes = new Map<string, LNode>();
    const edges = new Map<string, LEdge>();
    const more = new Map<string, More>();
    let truncated = false;
    let hidden = 0;
    for (const s of this.all.values()) {
      if (!s.snapshot) continue;
      truncated = truncated || s.snapshot.truncated;
      hidden = Math.max(hidden, s.snapshot.hiddenEdges || 0);
      for (const n of s.snapshot.nodes || []) {
        nodes.set(n.id, n);
        const m = more.get(n.id);
        const nu = n.more?.up ?? 0;
        const nd = n.more?.down ?? 0;
        more.set(n.id, m ? { up: Math.min(m.up, nu), down: Math.min(m.down, nd) } : { up: nu, down: nd });
      }
      for (const e of s.snapshot.edges || []) edges.set(e.id, e);
    }
    const visN = new Map<string, LNode>();
    for (const n of nodes.values()) if (!ds || n.type === 'DATASET') visN.set(n.id, n);
    const visE = new Map<string, LEdge>();
    for (const e of edges.values()) {
      if (ds !== (e.type === 'DERIVES')) continue;
      if (visN.has(e.origin) && visN.has(e.destination)) visE.set(e.id, e);
    }
    return { nodes, visN, visE, more, truncated, hidden };
  }

  status(): SourcesStatus {
    let loading = false;
    let live = this.all.size > 0;
    for (const s of this.all.values()) {
      if (!s.snapshot && !s.error) loading = true;
      if (!s.live) live = false;
    }
    let err: ApiError | null = null;
    for (const s of this.all.values()) if (s.error) err = err && err.graphDown ? err : s.error;
    return { count: this.all.size, loading, live, err };
  }
}
