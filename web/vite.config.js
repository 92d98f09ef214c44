import { defineConfig } from "vite";

// The built page is embedded in the scalemodel binary (cmake/embed_web.cmake);
// `npm run dev` proxies the API to a running `scalemodel ui`.
export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 1000 },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
