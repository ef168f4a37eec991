// The explorer API as the UI uses it (see explorer/openapi.yaml): our own
// routes under /api/lf/v1/.

export type NodeType = 'DATASET' | 'JOB';
export type EdgeType = 'INPUT_TO' | 'OUTPUTS' | 'DERIVES';

export interface LNode {
  id: string; // after exactIds: the exact node id (vertex:<vertex id>)
  ref?: string;
  type: NodeType;
  namespace: string;
  name: string;
  lastSeen: number | null;
  hasFailedRuns: boolean;
  lastRunState: string | null;
  more?: { up: number; down: number } | null;
}

export interface LEdge {
  id: string;
  type: EdgeType;
  origin: string;
  destination: string;
  originRef?: string;
  destinationRef?: string;
  firstSeen?: number;
  lastSeen?: number;
  lastRunId?: string;
}

export interface Lineage {
  center: string;
  centerRef?: string;
  nodes: LNode[];
  edges: LEdge[];
  truncated: boolean;
  hiddenEdges?: number;
  version: string;
}

export interface Run {
  runId: string;
  state: string;
  startedAt?: number | null;
  endedAt?: number | null;
  durationMs?: number | null;
  errorMessage?: string | null;
  updatedAt?: number | null;
}

export interface NodeDetails {
  id: string;
  type: NodeType;
  namespace: string;
  name: string;
  properties?: Record<string, unknown> | null;
  aliases?: { namespace: string; name: string; type?: string }[] | null;
  firstSeen?: number | null;
  lastSeen?: number | null;
  lastRunId?: string | null;
  runs?: Run[] | null;
  inputs?: string[] | null;
  outputs?: string[] | null;
}

export interface SearchResult {
  id: string;
  type: NodeType;
  namespace: string;
  name: string;
  matchedAlias?: { namespace: string; name: string } | null;
  matched?: 'name' | 'alias' | 'uri' | 'namespace' | 'glueTable';
  ref?: string; // exact node id (vertex:<vertex id>): two hits may share id, never ref
}

// The exact node id (vertex:<vertex id>) of each readable id seen in a
// lineage answer: every request the UI makes for a node goes by it, so a
// readable id (dataset:<namespace>:<name>), which may also name another
// node (namespace "s3" + name "//b:k" and namespace "s3://b" + name "k"),
// is never resolved by the server.
const refs = new Map<string, string>();

/** The exact id of node id when a lineage answer gave one, else id. */
export function exact(id: string): string {
  return refs.get(id) ?? id;
}

/** Records that readable id stands for exact id ref (a search hit chosen). */
export function remember(id: string, ref: string): void {
  refs.set(id, ref);
}

/**
 * Records the refs of a lineage answer. Two nodes of one answer with the
 * same readable id are keyed by their refs instead (so both are drawn,
 * apart), with their edges.
 */
export function exactIds(l: Lineage): Lineage {
  const count = new Map<string, number>();
  for (const n of l.nodes || []) count.set(n.id, (count.get(n.id) ?? 0) + 1);
  let dup = false;
  for (const n of l.nodes || []) {
    if (!n.ref) continue;
    if ((count.get(n.id) ?? 0) > 1) dup = true;
    else refs.set(n.id, n.ref);
  }
  if (!dup) return l;
  const dupRefs = new Set((l.nodes || []).filter((n) => n.ref && (count.get(n.id) ?? 0) > 1).map((n) => n.ref as string));
  return {
    ...l,
    center: l.centerRef && dupRefs.has(l.centerRef) ? l.centerRef : l.center,
    nodes: (l.nodes || []).map((n) => (n.ref && dupRefs.has(n.ref) ? { ...n, id: n.ref } : n)),
    edges: (l.edges || []).map((e) => ({
      ...e,
      origin: e.originRef && dupRefs.has(e.originRef) ? e.originRef : e.origin,
      destination: e.destinationRef && dupRefs.has(e.destinationRef) ? e.destinationRef : e.destination,
    })),
  };
}

/** An error answer of the API (JSON {code, message}) or a network failure. */
export class ApiError extends Error {
  constructor(public status: number, message: string, public errorClass = '') {
    super(message);
  }
  /** The graph (not the explorer server) is unreachable. */
  get graphDown(): boolean {
    return this.status === 503;
  }
}

let timeQS = '';

/**
 * Sets the time filter of every lineage query: asOf a date (YYYY-MM-DD, the
 * lineage at the end of that day UTC) or now; stale edges shown or hidden
 * (the server's default).
 */
export function setTime(asOf: string | null, stale: boolean): void {
  const q = new URLSearchParams();
  if (asOf) q.set('asOf', asOf + 'T23:59:59.999Z');
  if (stale) q.set('stale', 'show');
  timeQS = q.toString();
}

/** The time filter's query parameters ('' or 'asOf=...&stale=show'). */
export function timeQuery(): string {
  return timeQS;
}

export function lineageQuery(nodeId: string, up: number, down: number, maxNodes?: number): string {
  const q = new URLSearchParams({ nodeId, up: String(up), down: String(down) });
  if (maxNodes) q.set('maxNodes', String(maxNodes));
  return q.toString() + (timeQS ? '&' + timeQS : '');
}

export async function getJSON<T>(path: string, signal?: AbortSignal): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { headers: { Accept: 'application/json' }, signal });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'the explorer server cannot be reached');
  }
  if (!res.ok) {
    let msg = res.statusText;
    let cls = '';
    try {
      const body = await res.json();
      msg = body.message || body.error || msg;
      cls = body.error || '';
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, msg, cls);
  }
  return (await res.json()) as T;
}

export function fetchLineage(nodeId: string, up: number, down: number, maxNodes?: number, signal?: AbortSignal): Promise<Lineage> {
  return getJSON<Lineage>('/api/lf/v1/lineage?' + lineageQuery(nodeId, up, down, maxNodes), signal);
}

export function fetchNode(nodeId: string, signal?: AbortSignal): Promise<NodeDetails> {
  return getJSON<NodeDetails>('/api/lf/v1/node?' + new URLSearchParams({ nodeId: exact(nodeId) }).toString(), signal);
}

export async function search(q: string, limit: number, signal?: AbortSignal): Promise<SearchResult[]> {
  const r = await getJSON<{ results: SearchResult[] | null }>(
    '/api/lf/v1/search?' + new URLSearchParams({ q, limit: String(limit) }).toString(),
    signal,
  );
  return r.results || [];
}

/** A field of a dataset (a DatasetField vertex). */
export interface ColumnField {
  id: string; // datasetField:<namespace>:<dataset>:<field>
  namespace: string;
  dataset: string;
  field: string;
}

/** An input field -> output field edge (COLUMN_DERIVES). */
export interface ColumnEdge {
  origin: string;
  destination: string;
  transformationType: string | null;
  transformationDescription: string | null;
}

export interface ColumnLineage {
  center: string;
  fields: ColumnField[];
  edges: ColumnEdge[];
}

/** The column lineage of a node's fields, one level upstream. */
export async function fetchColumnLineage(nodeId: string, signal?: AbortSignal): Promise<ColumnLineage> {
  const r = await getJSON<ColumnLineage>('/api/lf/v1/column-lineage?' + new URLSearchParams({ nodeId: exact(nodeId), depth: '1' }).toString(), signal);
  return { center: r.center, fields: r.fields || [], edges: r.edges || [] };
}

/** The column lineage of one field (datasetField:<ns>:<dataset>:<field>), depth levels up and down. */
export async function fetchFieldLineage(fieldId: string, depth: number, signal?: AbortSignal): Promise<ColumnLineage> {
  const r = await getJSON<ColumnLineage>('/api/lf/v1/column-lineage?' + new URLSearchParams({ nodeId: fieldId, depth: String(depth), downstream: 'true' }).toString(), signal);
  return { center: r.center, fields: r.fields || [], edges: r.edges || [] };
}
