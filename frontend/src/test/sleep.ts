/** Real time passing, for tests that prove something does not happen within it. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
