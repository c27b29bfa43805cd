import { createHash } from 'node:crypto';

// A draft of 200 long items renders to about a megabyte in a few hundred milliseconds: a key
// that asks for the same preview again and again is served it from here. Bounded in bytes so
// the cache itself cannot become the memory problem it avoids.
const BUDGET_BYTES = 32 * 1024 * 1024;
const LARGEST_KEPT_BYTES = 4 * 1024 * 1024;

/**
 * Rendered draft PDFs of this process, keyed by a hash of everything the document is made of
 * (the invoice with its items, the merchant, the printed link), so that any change to a draft
 * or to its merchant renders anew and an unchanged draft is never rendered twice. The least
 * recently used go first.
 */
export class DraftPdfCache {
  private readonly entries = new Map<string, Buffer>();
  // Renders under way: the same draft asked for again meanwhile waits for that one.
  private readonly rendering = new Map<string, Promise<Buffer>>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly budget = BUDGET_BYTES) {}

  static keyOf(content: unknown): string {
    return createHash('sha256').update(JSON.stringify(content)).digest('base64');
  }

  async get(key: string, render: () => Promise<Buffer>): Promise<Buffer> {
    const kept = this.entries.get(key);
    if (kept) {
      this.hits += 1;
      // Re-inserted: a Map iterates in insertion order, so the first entry is the least recent.
      this.entries.delete(key);
      this.entries.set(key, kept);
      return kept;
    }
    const pending = this.rendering.get(key);
    if (pending) return pending;
    this.misses += 1;
    const rendered = render();
    this.rendering.set(key, rendered);
    let content: Buffer;
    try {
      content = await rendered;
    } finally {
      this.rendering.delete(key);
    }
    if (content.length <= Math.min(LARGEST_KEPT_BYTES, this.budget)) {
      this.entries.set(key, content);
      this.bytes += content.length;
      for (const [oldest, buf] of this.entries) {
        if (this.bytes <= this.budget) break;
        this.entries.delete(oldest);
        this.bytes -= buf.length;
      }
    }
    return content;
  }
}

export const draftPdfs = new DraftPdfCache();
