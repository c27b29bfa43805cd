import type { IncomingMessage, ServerResponse } from 'node:http';

// What every provider stand-in (Webpay, Mercado Pago, SII) does with its raw HTTP exchanges.

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The request's body as bytes: a multipart upload, or XML in another encoding than UTF-8. */
export function readBytes(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function readBody(req: IncomingMessage): Promise<string> {
  return (await readBytes(req)).toString('utf8');
}
