// The README's TypeScript blocks (```ts) compile under `strict` against the package's own types
// (dist/, as built by scripts/build.mjs), with the TypeScript of package-lock.json: a listener's
// `error` is `unknown` there, which a snippet written for JavaScript gets wrong. No server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));

test("the README's TypeScript snippets compile under strict", () => {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((match) => match[1]);
  assert.ok(blocks.length >= 1, "no ```ts block in the README");
  const dir = mkdtempSync(join(tmpdir(), "pg-bloomfilter-readme-"));
  try {
    const files = blocks.map((block, i) => {
      const file = join(dir, `snippet${i}.mts`);
      writeFileSync(file, block);
      return file;
    });
    const program = ts.createProgram(files, {
      strict: true, noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"],
      module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ["node"], typeRoots: [join(PACKAGE, "node_modules", "@types")],
      paths: { "pg-bloomfilter": [join(PACKAGE, "dist", "esm", "index.d.ts")] },
    });
    const errors = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : "";
      return `${where} TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
    assert.deepEqual(errors, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
