// The chrome alone (kill switch and its shortcut), for pages without data.
import { initChrome } from './common.js';

initChrome();
