// Keyboard use of the graph canvas: arrows move the selection along edges
// (left: inputs, right: outputs) and within a column (up, down); Enter
// expands the selected node.
import type cytoscape from 'cytoscape';
import type { GraphView } from './graph';

/** What the keys act on. */
export interface KeyTarget {
  selected(): string | null;
  centre(): string | null;
  select(id: string): void; // as a user's choice
  expand(id: string): void;
}

/** Handles a keydown on the graph canvas. */
export function graphKey(ev: KeyboardEvent, graph: GraphView, t: KeyTarget): void {
  const cy = graph.cy;
  const selId = t.selected();
  const sel = selId ? cy.getElementById(selId) : null;
  if (ev.key === 'Enter' && sel && sel.nonempty()) {
    t.expand(sel.id());
    ev.preventDefault();
    return;
  }
  if (!sel || sel.empty()) {
    const centre = t.centre();
    if (ev.key.startsWith('Arrow') && centre) {
      t.select(centre);
      ev.preventDefault();
    }
    return;
  }
  let next: cytoscape.NodeCollection | null = null;
  if (ev.key === 'ArrowLeft') next = sel.incomers('node');
  else if (ev.key === 'ArrowRight') next = sel.outgoers('node');
  else if (ev.key === 'ArrowUp' || ev.key === 'ArrowDown') {
    const sx = sel.position().x;
    const col: cytoscape.NodeSingular[] = [];
    cy.nodes().forEach((n) => {
      if (Math.abs(n.position().x - sx) < 40) col.push(n);
    });
    col.sort((a, b) => a.position().y - b.position().y);
    const i = col.findIndex((n) => n.id() === sel.id());
    const j = ev.key === 'ArrowUp' ? i - 1 : i + 1;
    if (j >= 0 && j < col.length) next = cy.getElementById(col[j].id()) as unknown as cytoscape.NodeCollection;
  }
  if (next && next.nonempty()) {
    t.select(next[0].id());
    cy.stop(true, false).animate({ center: { eles: next[0] } }, { duration: 150 });
    ev.preventDefault();
  }
}
