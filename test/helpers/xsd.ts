// Documents checked against SII's published XML schemas (test/schemas/sii) by libxml2's xmllint:
// a validator that is not this service's code, the way SII's own reception checks them.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

const SCHEMAS = {
  EnvioDTE: 'EnvioDTE_v10.xsd',
  EnvioBOLETA: 'EnvioBOLETA_v11.xsd',
  DTE: 'DTE_v10.xsd',
} as const;

export type SiiSchema = keyof typeof SCHEMAS;

const schemaFile = (schema: SiiSchema) => fileURLToPath(new URL(`../schemas/sii/${SCHEMAS[schema]}`, import.meta.url));

function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

const LOCK_WAIT_SECONDS = 300;

function installXmllint(): void {
  if (hasCommand('xmllint')) return;
  const how = "install Debian's libxml2-utils (`apt-get install libxml2-utils`, as root) and run the tests again";
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) throw new Error(`xmllint is not installed and this run cannot install it (it needs root and apt-get): ${how}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (...args: string[]) => execFileSync('apt-get', ['-o', `DPkg::Lock::Timeout=${LOCK_WAIT_SECONDS}`, ...args], { env, stdio: 'ignore' });
  const install = () => apt('install', '-y', '--no-install-recommends', 'libxml2-utils');
  try {
    try {
      install();
    } catch {
      // A machine whose package lists were never fetched knows no libxml2-utils yet.
      apt('update');
      install();
    }
  } catch (err) {
    // Another test file installing it at the same time holds apt's locks and may have won.
    if (!hasCommand('xmllint')) throw new Error(`installing libxml2-utils failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)}): ${how}`);
  }
}

let install: Error | true | undefined;

export interface XsdResult {
  valid: boolean;
  /** xmllint's messages, each naming the line (`-:LINE:`) and the element. */
  errors: string[];
}

/**
 * The document validated against SII's schema: `EnvioDTE` or `EnvioBOLETA` for an envelope, `DTE`
 * for a signed DTE on its own (as dte_documents stores it). A Buffer goes as its bytes, with the
 * encoding its XML declaration names; a string goes as UTF-8, so it must declare no other.
 */
export function validateXml(xml: Buffer | string, schema: SiiSchema): XsdResult {
  // Tried once per test file: a machine that cannot have xmllint fails every document with its one reason.
  install ??= (() => {
    try {
      installXmllint();
      return true as const;
    } catch (err) {
      return err as Error;
    }
  })();
  if (install !== true) throw install;
  const run = spawnSync('xmllint', ['--noout', '--nonet', '--schema', schemaFile(schema), '-'], { input: xml, encoding: 'utf8' });
  if (run.error) throw run.error;
  // 5: the schema itself did not compile, a fault of the set-up and not of the document.
  if (run.status === 5) throw new Error(`xmllint could not load ${SCHEMAS[schema]}: ${run.stderr.trim()}`);
  const errors = run.stderr.split('\n').filter((line) => line !== '' && line !== '- validates' && line !== '- fails to validate');
  return { valid: run.status === 0, errors };
}

/** One assertion: the document is valid against the schema, or fails with xmllint's messages. */
export function assertValid(t: Pick<Test, 'ok'>, xml: Buffer | string, schema: SiiSchema, label: string): boolean {
  const { valid, errors } = validateXml(xml, schema);
  return t.ok(valid, `${label} is valid against ${SCHEMAS[schema]}`, { errors });
}
