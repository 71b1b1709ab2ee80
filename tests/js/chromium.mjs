// Prints the path of the headless Chromium that the npm package @sparticuz/chromium ships
// inside its registry tarball (brotli-compressed), unpacking it on first use into
// node_modules/.cache/b3os-chromium: the package unpacks into the temp directory, so that
// is pointed there. `make install` runs this once; tests/support/chromium.py runs it too.
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("./node_modules/.cache/b3os-chromium/", import.meta.url));
mkdirSync(dir, { recursive: true });
process.env.TMPDIR = dir;
const { default: chromium } = await import("@sparticuz/chromium");
console.log(await chromium.executablePath());
