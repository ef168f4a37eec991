// The status line (Live, Loading…, Graph unreachable, ...) and the error
// banner under the bar.
import type { ApiError } from './api';
import { $ } from './dom';
import type { SourcesStatus } from './sources';

export class StatusBar {
  /** An error of something other than the sources (search): shown when the sources have none. */
  extra: ApiError | null = null;

  /** Shows the sources' status, and their error (or extra) in the banner. */
  update(s: SourcesStatus): void {
    const st = $('status');
    const { loading, live, err } = s;
    st.className = 'status' + (err ? ' down' : loading ? ' loading' : live ? ' live' : '');
    st.textContent = err ? (err.graphDown ? 'Graph unreachable' : 'Error') : loading ? 'Loading…' : live ? 'Live' : s.count ? 'Not live' : '';
    this.banner(err);
    st.setAttribute('aria-busy', String(loading));
  }

  /** Shows e (or extra when e is null) in the banner; hides the banner when both are null. */
  banner(e: ApiError | null): void {
    const b = $('banner');
    e = e || this.extra;
    if (!e) {
      b.hidden = true;
      b.textContent = '';
      b.removeAttribute('data-error');
      return;
    }
    let text: string;
    if (e.graphDown) {
      text = 'The lineage graph is unreachable' + (e.errorClass ? ' (' + e.errorClass + ')' : '') + ': ' + e.message + '. Retrying…';
    } else if (e.status === 404) {
      text = 'Not found: ' + e.message;
    } else if (e.status === 0) {
      text = 'The explorer server cannot be reached: ' + e.message + '.';
    } else {
      text = 'Error ' + e.status + ': ' + e.message;
    }
    b.textContent = text;
    b.setAttribute('data-error', e.graphDown ? 'graph_unreachable' : String(e.status));
    b.hidden = false;
  }
}
