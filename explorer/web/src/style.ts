// How the graph looks: the node data (label, size) of a lineage node and
// the two stylesheets, STYLE and the lighter STYLE_BIG for big
// neighbourhoods.
import type cytoscape from 'cytoscape';
import type { LNode } from './api';
import type { More } from './sources';

// Node labels: font size, and the smallest rendered size drawn (min-zoomed-font-size).
export const LABEL_FONT = 13;
// Labels that would render smaller than this are hidden (zoom in, or read
// the node list): at depth 5 the fitted view drew 7-9 px labels.
export const LABEL_MIN_PX = 10;

/**
 * Splits a long name into lines of at most `width` characters, after the
 * separators of dataset and job names (. / _ | : - space), so that the
 * drawing stays narrow; at most 3 lines, the middle elided.
 */
export function wrapName(name: string, width: number): string[] {
  const parts = name.match(/[^./_|:\- ]*[./_|:\- ]?/g)?.filter((p) => p !== '') || [name];
  const lines: string[] = [];
  let cur = '';
  for (let p of parts) {
    while (p.length > width) {
      if (cur) lines.push(cur);
      cur = '';
      lines.push(p.slice(0, width));
      p = p.slice(width);
    }
    if ((cur + p).length > width && cur) {
      lines.push(cur);
      cur = '';
    }
    cur += p;
  }
  if (cur) lines.push(cur);
  if (lines.length > 3) return [lines[0], '…', lines[lines.length - 1]];
  return lines;
}

export function nodeData(n: LNode, m: More, center: boolean): Record<string, unknown> {
  const extra: string[] = [];
  if (m.up) extra.push('◂ ' + m.up + ' more');
  if (m.down) extra.push(m.down + ' more ▸');
  const lines = wrapName(n.name, 20);
  if (n.hasFailedRuns) lines.push('⚠ failed runs');
  if (extra.length) lines.push(extra.join('   '));
  const longest = Math.max(...lines.map((l) => l.length));
  return {
    id: n.id,
    label: lines.join('\n'),
    type: n.type,
    failed: n.hasFailedRuns ? 1 : 0,
    center: center ? 1 : 0,
    more: m.up + m.down,
    w: Math.max(60, Math.min(300, longest * 7.6 + 18)),
    h: 14 + lines.length * 16,
  };
}

export const STYLE: cytoscape.StylesheetJson = [
  {
    selector: 'node',
    style: {
      shape: 'round-rectangle',
      width: 'data(w)',
      height: 'data(h)',
      label: 'data(label)',
      'text-wrap': 'wrap',
      'text-valign': 'center',
      'text-halign': 'center',
      'font-size': LABEL_FONT,
      'font-family': 'system-ui, sans-serif',
      'min-zoomed-font-size': LABEL_MIN_PX,
      color: '#1d2330',
      'background-color': '#e8f0fd',
      'border-width': 1.5,
      'border-color': '#2f6fde',
    },
  },
  { selector: 'node[type = "JOB"]', style: { shape: 'cut-rectangle', 'background-color': '#efeafb', 'border-color': '#6b4fbb' } },
  { selector: 'node[failed = 1]', style: { 'border-color': '#d12d2d', 'border-width': 2.5, 'border-style': 'dashed' } },
  { selector: 'node[center = 1]', style: { 'border-width': 3, 'font-weight': 'bold' } },
  {
    selector: 'edge',
    style: {
      width: 1.5,
      'line-color': '#9aa3b5',
      'target-arrow-color': '#9aa3b5',
      'target-arrow-shape': 'triangle',
      'curve-style': 'straight',
      'arrow-scale': 0.9,
    },
  },
  { selector: 'edge[type = "DERIVES"]', style: { 'line-style': 'dashed' } },
  { selector: '.up', style: { 'border-color': '#0a8f6a', 'line-color': '#0a8f6a', 'target-arrow-color': '#0a8f6a' } },
  { selector: '.down', style: { 'border-color': '#d9822b', 'line-color': '#d9822b', 'target-arrow-color': '#d9822b' } },
  { selector: 'node.up, node.down', style: { 'border-width': 2.5 } },
  { selector: '.sel', style: { 'border-color': '#111', 'border-width': 3.5, 'overlay-opacity': 0 } },
  { selector: '.faded', style: { opacity: 0.35 } },
  { selector: 'node.arrived', style: { 'border-color': '#e0a800', 'border-width': 4, 'border-style': 'double' } },
  { selector: 'node:selected', style: { 'overlay-opacity': 0 } },
];

// Above DAGRE_MAX_NODES (graph.ts): nodes without labels until the user zooms in far
// enough to read them (labelsInView: measuring and caching 1,000 labels
// is a third of the first frame, and at the zoom that fits 1,000 nodes
// min-zoomed-font-size hides them anyway), and haystack edges (no edge-endpoint geometry to
// compute: the cheapest edges cytoscape draws) with a mid arrow for the
// direction.
// The label properties of nodes: in STYLE on every node, in STYLE_BIG only
// on the labelled ones (node.lbl).
const LABEL_PROPS = ['label', 'text-wrap', 'text-valign', 'text-halign', 'font-size', 'font-family', 'min-zoomed-font-size', 'color'];
// Cytoscape computes each element's style in the frame that first draws it,
// at a cost per property of every matching rule (each one that can change
// the bounds dirties the element's edges and notifies the renderer): the
// big style's unlabelled node has no label properties at all, and its edge
// no property with the default value.
export const STYLE_BIG: cytoscape.StylesheetJson = STYLE.map((r) => {
  if (r.selector === 'edge') {
    return { selector: 'edge', style: { width: 1.5, 'line-color': '#9aa3b5', 'mid-target-arrow-color': '#9aa3b5', 'mid-target-arrow-shape': 'triangle', 'curve-style': 'haystack', 'arrow-scale': 0.9 } };
  }
  if (r.selector !== 'node') return r;
  const st = (r as unknown as { style: Record<string, unknown> }).style;
  return { selector: 'node', style: Object.fromEntries(Object.entries(st).filter(([k]) => !LABEL_PROPS.includes(k))) };
}).concat([
  {
    selector: 'node.lbl',
    style: Object.fromEntries(Object.entries((STYLE[0] as unknown as { style: Record<string, unknown> }).style).filter(([k]) => LABEL_PROPS.includes(k))),
  },
]) as cytoscape.StylesheetJson;

/** Overrides of STYLE / STYLE_BIG in dark mode. */
export const STYLE_DARK: cytoscape.StylesheetJson = [
  { selector: 'node', style: { color: '#e6e9f0', 'background-color': '#1e2b45', 'border-color': '#6f9cf0' } },
  { selector: 'node[type = "JOB"]', style: { 'background-color': '#2b2445', 'border-color': '#a58ff0' } },
  { selector: 'node[failed = 1]', style: { 'border-color': '#ff6b6b' } },
  { selector: 'edge', style: { 'line-color': '#6b7489', 'target-arrow-color': '#6b7489', 'mid-target-arrow-color': '#6b7489' } },
  { selector: '.up', style: { 'border-color': '#2fc79a', 'line-color': '#2fc79a', 'target-arrow-color': '#2fc79a' } },
  { selector: '.down', style: { 'border-color': '#f0a050', 'line-color': '#f0a050', 'target-arrow-color': '#f0a050' } },
  { selector: '.sel', style: { 'border-color': '#fff' } },
];
