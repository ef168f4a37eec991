// What the page exposes to tests, benchmarks and tools/screenshot as
// window.__lf: the cytoscape instance, render counts and timings, the
// marks of the page's start, uncaught errors and the view's state. The
// app reports to it (renderStarted, rendered); nothing here changes what
// the user sees.
import type cytoscape from 'cytoscape';
import type { ViewState } from './state';

// When the bundle ran (performance.now()): the start of the app's timeline
// in __lf.marks (evalAt, appAt, cyAt, earlyAt, sseAt, frameAt, ...).
const EVAL_AT = performance.now();
export const marks: Record<string, number> = { evalAt: EVAL_AT };

/** Records the first time the page reached a step of its start. */
export function mark(name: string): void {
  if (!(name in marks)) marks[name] = performance.now();
}

export interface TestHooks {
  cy: cytoscape.Core;
  renders: number;
  lastRenderMs: number;
  ready: boolean;
  interactiveAt: number; // performance.now() of the first frame after the first complete render
  timings: Record<string, number>; // ms of the parts of the last render
  marks: Record<string, number>; // performance.now() of the first time of each step of the page's start (mark)
  errors: string[];
  state: () => ViewState;
}

/** Publishes the hooks as window.__lf and collects uncaught errors. */
export function installHooks(cy: cytoscape.Core, state: () => ViewState): TestHooks {
  const hooks: TestHooks = { cy, renders: 0, lastRenderMs: 0, ready: false, interactiveAt: 0, timings: {}, marks, errors: [], state };
  (window as unknown as { __lf: TestHooks }).__lf = hooks;
  window.addEventListener('error', (e) => hooks.errors.push(String(e.message)));
  window.addEventListener('unhandledrejection', (e) => hooks.errors.push(String(e.reason)));
  return hooks;
}

/** A render began at t0 (performance.now()). */
export function renderStarted(h: TestHooks, t0: number): void {
  if (!h.ready) h.timings.renderStart = t0;
}

/**
 * A render that began at t0 ended: parts are the ms of its steps; ready
 * says the view's every source answered and something is drawn. The first
 * ready render records when cytoscape drew it (drawnAt) and when the page
 * was next interactive (interactiveAt).
 */
export function rendered(h: TestHooks, t0: number, parts: Record<string, number>, ready: boolean): void {
  h.timings = { ...h.timings, ...parts };
  h.renders++;
  h.lastRenderMs = performance.now() - t0;
  h.ready = ready;
  if (h.ready && !h.interactiveAt) {
    h.cy.one('render', () => (h.timings.drawnAt = performance.now()));
    requestAnimationFrame(() => {
      mark('frameAt');
      window.setTimeout(() => (h.interactiveAt = performance.now()), 0);
    });
  }
}
