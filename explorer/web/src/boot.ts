// The boot script: loaded before the app's bundle (index.html), it starts
// reading the lineage of the view's centre at once, so that the server
// computes it while the browser loads and runs the bundle; the app's
// centre source takes the answer (takeEarly) and opens its event stream as
// usual.
import { fetchEarly } from './state';

fetchEarly();
