// Injection tokens of Scribe's modules that are not classes. One file, so that a host (or a
// test) finds every token it may provide or inject in one place.

/** The ScribeOptions a host passed to ScribeModule.forRoot (or its async factory's result). */
export const SCRIBE_OPTIONS = Symbol('SCRIBE_OPTIONS');
