// Where nodes go: the layered (dagre) layout of a small neighbourhood, the
// rank layout of a big one, and the placing of the nodes a live update
// adds next to their drawn neighbours (nodes already drawn never move).
import type cytoscape from 'cytoscape';
import type { LEdge, LNode } from './api';

export interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface RankLayout {
  pos: Map<string, { x: number; y: number }>;
  box: Box; // of the nodes, with their sizes
  ms: number;
}

/**
 * The layout of big neighbourhoods, where dagre's crossing minimisation
 * takes seconds: rank = signed hops from the centre (left upstream, right
 * downstream), order in a rank by the order of the neighbours one rank
 * nearer the centre (a breadth-first tree from the centre has no crossing
 * then). O(n log n) over plain maps, before the elements reach cytoscape.
 * A rank of more than colMax nodes (a hub's neighbours) is wrapped into
 * balanced sub-columns; sized: space the columns and rows by the nodes'
 * label sizes (views whose labels are drawn).
 */
export function rankLayout(centerId: string | null, visN: Map<string, LNode>, visE: Map<string, LEdge>, datas: Map<string, Record<string, unknown>>, colMax = 40, sized = false): RankLayout {
  const tl0 = performance.now();
  const outs = new Map<string, string[]>();
  const ins = new Map<string, string[]>();
  for (const e of visE.values()) {
    if (!outs.has(e.origin)) outs.set(e.origin, []);
    (outs.get(e.origin) as string[]).push(e.destination);
    if (!ins.has(e.destination)) ins.set(e.destination, []);
    (ins.get(e.destination) as string[]).push(e.origin);
  }
  const center = centerId && visN.has(centerId) ? centerId : (visN.keys().next().value as string);
  const rank = new Map<string, number>([[center, 0]]);
  const parent = new Map<string, string>();
  const queue = [center];
  for (let i = 0; i < queue.length; i++) {
    const id = queue[i];
    const r = rank.get(id) as number;
    const visit = (m: string, d: number): void => {
      if (rank.has(m)) return;
      rank.set(m, r + d);
      parent.set(m, id);
      queue.push(m);
    };
    const o = outs.get(id) || [];
    const n = ins.get(id) || [];
    // Away from the centre first, so that a node keeps its side.
    if (r >= 0) o.forEach((m) => visit(m, 1));
    if (r <= 0) n.forEach((m) => visit(m, -1));
    o.forEach((m) => visit(m, 1));
    n.forEach((m) => visit(m, -1));
  }
  let minR = 0;
  for (const id of visN.keys()) {
    if (!rank.has(id)) rank.set(id, --minR - 1000); // unconnected: own columns, placed left below
  }
  const byRank = new Map<number, string[]>();
  for (const [id, r] of rank) {
    if (!byRank.has(r)) byRank.set(r, []);
    (byRank.get(r) as string[]).push(id);
  }
  const ranks = [...byRank.keys()].filter((r) => r > -1000).sort((a, b) => Math.abs(a) - Math.abs(b) || a - b);
  const index = new Map<string, number>();
  const RANK = 230;
  const GAP = 40; // between the widest nodes of neighbouring (sub-)columns
  // A rank of more than colMax nodes is wrapped into balanced sub-columns,
  // as wide and as tall as its widest and tallest node need.
  // sized: labels are drawn, so sizes count (a big view draws them small).
  const size = (id: string, k: 'w' | 'h', def: number): number => {
    const d = sized ? datas.get(id) : undefined;
    return d && typeof d[k] === 'number' ? (d[k] as number) : def;
  };
  const dims = new Map<number, { cols: number; per: number; w: number; row: number }>();
  for (const [r, ids] of byRank) {
    const cols = Math.ceil(ids.length / colMax);
    let w = 60;
    let h = 30;
    for (const id of ids) {
      w = Math.max(w, size(id, 'w', 60));
      h = Math.max(h, size(id, 'h', 30));
    }
    dims.set(r, { cols, per: Math.ceil(ids.length / cols), w, row: Math.max(50, h + 10) });
  }
  const dim = (r: number) => dims.get(r) as { cols: number; per: number; w: number; row: number };
  const colW = (r: number): number => Math.max(RANK * 0.8, dim(r).w + GAP);
  const pos = new Map<string, { x: number; y: number }>();
  // x of each rank: ranks further from the centre start after the sub-columns of the nearer ones.
  const step = (a: number, b: number): number => Math.max(RANK, (dim(a).w + dim(b).w) / 2 + GAP);
  const xOf = new Map<number, number>([[0, 0]]);
  for (let r = 1; byRank.has(r); r++) xOf.set(r, (xOf.get(r - 1) as number) + (dim(r - 1).cols - 1) * colW(r - 1) + step(r - 1, r));
  for (let r = -1; byRank.has(r); r--) xOf.set(r, (xOf.get(r + 1) as number) - (dim(r).cols - 1) * colW(r) - step(r, r + 1));
  for (const r of ranks) {
    const ids = byRank.get(r) as string[];
    ids.sort((a, b) => (index.get(parent.get(a) || '') ?? 0) - (index.get(parent.get(b) || '') ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
    const { per, row } = dim(r);
    const rows = Math.min(per, ids.length);
    const x0 = xOf.get(r) ?? r * RANK;
    const cw = colW(r);
    ids.forEach((id, i) => {
      index.set(id, i);
      const c = Math.floor(i / per);
      pos.set(id, { x: x0 + c * cw, y: ((i % per) - (rows - 1) / 2) * row });
    });
  }
  let x = 0;
  for (const [r, ids] of byRank) {
    if (r > -1000) continue;
    ids.forEach((id, i) => pos.set(id, { x, y: (i + 1) * 50 + 2000 }));
    x += RANK;
  }
  // The box from the known node sizes: a fit would measure every label.
  const box = { x1: Infinity, y1: Infinity, x2: -Infinity, y2: -Infinity };
  for (const [id, p] of pos) {
    const d = datas.get(id);
    const w = (d ? (d.w as number) : 60) / 2;
    const h = (d ? (d.h as number) : 30) / 2;
    box.x1 = Math.min(box.x1, p.x - w);
    box.x2 = Math.max(box.x2, p.x + w);
    box.y1 = Math.min(box.y1, p.y - h);
    box.y2 = Math.max(box.y2, p.y + h);
  }
  return { pos, box, ms: performance.now() - tl0 };
}

/** Lays out every node with dagre (left to right) and fits them, at most zoom 1.4. */
export function layoutAll(cy: cytoscape.Core): void {
  cy.layout({
    name: 'dagre',
    rankDir: 'LR',
    nodeSep: 14,
    rankSep: 42,
    edgeSep: 8,
    fit: true,
    padding: 30,
    animate: false,
  } as cytoscape.LayoutOptions).run();
  if (cy.zoom() > 1.4) {
    cy.zoom(1.4);
    cy.center();
  }
}

/** Fits the viewport to a box of model coordinates (at most zoom 1.4), without measuring elements. */
export function fitBox(cy: cytoscape.Core, b: Box): void {
  const pad = 30;
  const zoom = Math.max(cy.minZoom(), Math.min(1.4, (cy.width() - 2 * pad) / (b.x2 - b.x1), (cy.height() - 2 * pad) / (b.y2 - b.y1)));
  cy.viewport({ zoom, pan: { x: (cy.width() - zoom * (b.x1 + b.x2)) / 2, y: (cy.height() - zoom * (b.y1 + b.y2)) / 2 } });
}

/**
 * Places new nodes next to an already placed neighbour (right of their
 * inputs, left of their outputs) in the first free row; old nodes stay.
 */
export function placeNew(cy: cytoscape.Core, ids: string[]): void {
  const RANK = 200;
  const ROW = 56;
  const pending = new Set(ids);
  const pos: { x: number; y: number }[] = [];
  cy.nodes().forEach((n) => {
    if (!pending.has(n.id())) pos.push({ ...n.position() });
  });
  const free = (x: number, y: number): boolean => pos.every((p) => Math.abs(p.x - x) > RANK / 2 || Math.abs(p.y - y) > ROW * 0.8);
  const put = (id: string, x: number, y0: number): void => {
    let y = y0;
    for (let k = 1; !free(x, y) && k < 400; k++) y = y0 + (k % 2 ? 1 : -1) * Math.ceil(k / 2) * ROW;
    cy.getElementById(id).position({ x, y });
    pos.push({ x, y });
    pending.delete(id);
  };
  let progress = true;
  while (pending.size && progress) {
    progress = false;
    for (const id of [...pending]) {
      const node = cy.getElementById(id);
      const src = node.incomers('node').filter((n) => !pending.has(n.id()));
      const dst = node.outgoers('node').filter((n) => !pending.has(n.id()));
      if (src.nonempty()) {
        const p = src[0].position();
        put(id, p.x + RANK, p.y);
        progress = true;
      } else if (dst.nonempty()) {
        const p = dst[0].position();
        put(id, p.x - RANK, p.y);
        progress = true;
      }
    }
  }
  // Not connected to anything drawn: below the drawing.
  const bb = cy.nodes().filter((n) => !pending.has(n.id())).boundingBox({});
  let x = isFinite(bb.x1) ? bb.x1 : 0;
  const y = isFinite(bb.y2) ? bb.y2 + ROW : 0;
  for (const id of [...pending]) {
    put(id, x, y);
    x += RANK;
  }
}

/** Pans (and zooms out if needed) so that the given nodes are in view. */
export function reveal(cy: cytoscape.Core, ids: string[]): void {
  const ext = cy.extent();
  const out = ids.some((id) => {
    const p = cy.getElementById(id).position();
    return p.x < ext.x1 || p.x > ext.x2 || p.y < ext.y1 || p.y > ext.y2;
  });
  if (!out) return;
  const zoom = Math.min(cy.zoom(), 1.4);
  cy.stop(true, false);
  cy.animate({ fit: { eles: cy.elements(), padding: 30 } }, { duration: 200, complete: () => {
    if (cy.zoom() > zoom) cy.zoom(zoom);
  } });
}
