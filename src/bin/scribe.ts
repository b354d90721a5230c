#!/usr/bin/env node
// `scribe` (`npx scribe` from an installed package): the service exactly as `npm start` runs it.
// NODE_ENV defaults to production as the start script's `${NODE_ENV:-production}` does; it is
// set before main.js is loaded (hence the dynamic import: a static one would run first), and
// main.js starts the server as it loads. The data directory stays ./data of the working directory.
process.env.NODE_ENV ??= 'production';
await import('../main.js');
