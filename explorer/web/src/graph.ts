// The drawn graph: a cytoscape instance kept in step with the view's
// lineage by a diff (draw), so that a live update adds and removes
// elements and leaves the others, with the user's zoom, pan and selection,
// where they are.
import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { fitBox, layoutAll, placeNew, rankLayout, reveal } from './layout';
import type { RankLayout } from './layout';
import type { LEdge } from './api';
import type { Merged } from './sources';
import { LABEL_FONT, LABEL_MIN_PX, STYLE, STYLE_BIG, STYLE_DARK, nodeData } from './style';

cytoscape.use(dagre);

// Above this many nodes the layered (dagre) layout takes seconds: the rank layout is used.
const DAGRE_MAX_NODES = 250;
const HUB_COL = 24; // at most this many nodes in one column of a hub's neighbours

/** The most edges one node has on one side (in or out). */
function widestSide(visE: Map<string, LEdge>): number {
  const n = new Map<string, number>();
  let most = 0;
  for (const e of visE.values()) {
    for (const k of ['>' + e.origin, '<' + e.destination]) {
      const c = (n.get(k) || 0) + 1;
      n.set(k, c);
      if (c > most) most = c;
    }
  }
  return most;
}

/** What a draw did. */
export interface Drawn {
  added: string[]; // ids of the nodes it added
  diffAt: number; // performance.now() when the elements were in place (before the layout)
  rankMs?: number; // ms of the rank layout, when it ran
}

const ARRIVED_MS = 5000;

export class GraphView {
  readonly cy: cytoscape.Core;
  private bigStyle = false; // STYLE_BIG is in use (more than DAGRE_MAX_NODES nodes)
  private labelsQueued = false;
  private dark = false;

  constructor(container: HTMLElement) {
    this.cy = cytoscape({
      container,
      wheelSensitivity: 0.3,
      minZoom: 0.05,
      maxZoom: 3,
      boxSelectionEnabled: false,
      hideEdgesOnViewport: false,
      textureOnViewport: false,
      autoungrabify: false,
      style: STYLE,
    });
    this.cy.on('viewport', () => this.queueLabels());
  }

  /** Marks nodes that arrived live (class "arrived") for ARRIVED_MS, then calls ended. */
  markArrived(ids: string[], ended?: () => void): void {
    let els = this.cy.collection();
    for (const id of ids) els = els.union(this.cy.getElementById(id));
    els.addClass('arrived');
    window.setTimeout(() => {
      els.removeClass('arrived');
      if (ended) ended();
    }, ARRIVED_MS);
  }

  /** Dark or light colours for the graph (the page's follow its CSS). */
  theme(dark: boolean): void {
    if (dark === this.dark) return;
    this.dark = dark;
    this.applyStyle();
  }

  private applyStyle(): void {
    const base = this.bigStyle ? STYLE_BIG : STYLE;
    this.cy.style(this.dark ? (base as unknown[]).concat(STYLE_DARK as unknown[]) as cytoscape.StylesheetJson : base);
  }

  /**
   * Makes the drawn elements those of v (centre: the view's centre node).
   * relayout: lay everything out again (a new view), else new nodes are
   * placed next to their neighbours, and with revealNew the viewport
   * moves to show them.
   */
  draw(v: Merged, centre: string | null, relayout: boolean, revealNew: boolean): Drawn {
    const { visN, visE, more } = v;
    const cy = this.cy;
    const hadNodes = cy.nodes().length > 0;
    const added: string[] = [];
    const datas = new Map<string, Record<string, unknown>>();
    for (const n of visN.values()) {
      datas.set(n.id, nodeData(n, more.get(n.id) || { up: 0, down: 0 }, n.id === centre));
      if (cy.getElementById(n.id).empty()) added.push(n.id);
    }
    // A big neighbourhood gets the lighter style and is laid out here,
    // before its elements reach cytoscape: they are added at their final
    // positions (moving 1,000 drawn nodes afterwards costs a bounding-box
    // update and an event each).
    const big = visN.size > DAGRE_MAX_NODES;
    if (big !== this.bigStyle) {
      this.bigStyle = big;
      this.applyStyle();
    }
    let preset: RankLayout | null = null;
    // A hub's neighbours would be one tall dagre column: a view with a node
    // of more than HUB_COL visible neighbours on one side gets the rank
    // layout, its ranks wrapped into columns of at most HUB_COL nodes.
    if (added.length && (relayout || !hadNodes)) {
      if (big) preset = rankLayout(centre, visN, visE, datas);
      else if (widestSide(visE) > HUB_COL) preset = rankLayout(centre, visN, visE, datas, HUB_COL, true);
    }
    const adds: cytoscape.ElementDefinition[] = [];
    cy.batch(() => {
      cy.edges().forEach((e) => {
        if (!visE.has(e.id())) e.remove();
      });
      cy.nodes().forEach((n) => {
        if (!visN.has(n.id())) n.remove();
      });
      for (const n of visN.values()) {
        const data = datas.get(n.id) as Record<string, unknown>;
        const cur = cy.getElementById(n.id);
        const p = preset ? preset.pos.get(n.id) : undefined;
        if (cur.nonempty()) {
          const old = cur.data();
          if (old.label !== data.label || old.more !== data.more || old.failed !== data.failed || old.center !== data.center) cur.data(data);
          if (p) cur.position(p);
        } else {
          adds.push(p ? { group: 'nodes', data, position: p } : { group: 'nodes', data });
        }
      }
      for (const e of visE.values()) {
        if (cy.getElementById(e.id).nonempty()) continue;
        adds.push({ group: 'edges', data: { id: e.id, source: e.origin, target: e.destination, type: e.type } });
      }
      if (adds.length) cy.add(adds);
    });

    const diffAt = performance.now();
    if (preset) {
      fitBox(cy, preset.box);
    } else if (added.length) {
      if (relayout || !hadNodes) layoutAll(cy);
      else {
        placeNew(cy, added);
        if (revealNew) reveal(cy, added);
      }
    }
    this.queueLabels();
    return preset ? { added, diffAt, rankMs: preset.ms } : { added, diffAt };
  }

  /** Marks the selected node (sel), what is upstream (up) and downstream (down) of it, and fades the rest. */
  highlight(selId: string | null): void {
    const cy = this.cy;
    const sel = selId ? cy.getElementById(selId) : null;
    cy.batch(() => {
      // Only the elements that have one: a class change restyles the element.
      cy.elements('.sel, .up, .down, .faded').removeClass('sel up down faded');
      if (!sel || sel.empty()) return;
      const up = sel.predecessors();
      const down = sel.successors();
      cy.elements().not(up).not(down).not(sel).addClass('faded');
      up.addClass('up');
      down.addClass('down');
      sel.addClass('sel');
      sel.select();
    });
  }

  /** The node is drawn. */
  has(id: string): boolean {
    return this.cy.getElementById(id).nonempty();
  }

  /** Whether the drawn node id is selected, upstream or downstream of the selection (highlight). */
  classesOf(id: string): { sel: boolean; up: boolean; down: boolean; arrived: boolean } {
    const n = this.cy.getElementById(id);
    return { sel: n.hasClass('sel'), up: n.hasClass('up'), down: n.hasClass('down'), arrived: n.hasClass('arrived') };
  }

  /** Pans to centre the node, if drawn. */
  centreOn(id: string): void {
    const node = this.cy.getElementById(id);
    if (node.nonempty()) this.cy.stop(true, false).animate({ center: { eles: node } }, { duration: 150 });
  }

  fit(): void {
    this.cy.fit(undefined, 30);
  }

  private queueLabels(): void {
    if (!this.bigStyle || this.labelsQueued) return;
    this.labelsQueued = true;
    window.setTimeout(() => {
      this.labelsQueued = false;
      this.labelsInView();
    }, 60);
  }

  /**
   * With the big style, gives the nodes in view their label (class lbl)
   * once the zoom makes labels readable; a label once given stays.
   */
  private labelsInView(): void {
    const cy = this.cy;
    if (!this.bigStyle || cy.zoom() * LABEL_FONT < LABEL_MIN_PX) return;
    const ext = cy.extent();
    const m = 150; // model units around the view: half a node plus panning slack
    cy.batch(() => {
      cy.nodes().forEach((n) => {
        if (n.hasClass('lbl')) return;
        const p = n.position();
        if (p.x >= ext.x1 - m && p.x <= ext.x2 + m && p.y >= ext.y1 - m && p.y <= ext.y2 + m) n.addClass('lbl');
      });
    });
  }
}
