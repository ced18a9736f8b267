import { defineConfig } from "vite";

// The console is served by outboxd under /console/ from the committed
// dist/ (embedded with go:embed), so it is built with that base and no
// external resources.
export default defineConfig({
  base: "/console/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // One small bundle; no modulepreload polyfill (an inline script would
    // need a CSP exception).
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
