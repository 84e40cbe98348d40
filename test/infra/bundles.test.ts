/**
 * Bundle budget: each function, built with the stack's own esbuild options
 * (infra/bundling.ts), must stay within its size. The budgets are the bundles' sizes once the
 * MSK IAM token was signed with the SDK's own SigV4 parts (command handler 731.4 kB, down from
 * 864.8 kB), plus about 2%: a new dependency that pushes a bundle past its budget fails here,
 * and a budget is raised only on purpose. `npm run bench:bundles` shows what a bundle holds.
 * Raised since: snapshotRebuild to 845 kB when the rebuild read the log through the one event
 * reader and the upcaster chains (824.0 → 828.2 kB); lowered to 840 kB when each handler
 * imported only its own side's composition (functions/compose/: 829.5 kB). Raised by 15 kB each
 * (commandApi, both handlers, the rebuild) when every edge checked the wire's limits and the
 * content a store refuses (core/limits.ts), the event side refused what a row cannot hold, and
 * kafkajs's retried errors were logged at debug: 740.7, 748.6, 742.4 and 840.1 kB. The command
 * handler's by 10 kB when it checked the cutover between generations of its topic and stored a
 * partition's first checkpoint, applying releases by the record they name (about 765 kB).
 * Raised by 5 kB (commandHandler, commandApi, the rebuild) when a partition's releases moved
 * into its checkpoint item (adapters/dynamodb/partition-items.ts, the previous layout still
 * read): commandApi 756.3 and the rebuild 856.5 kB. The rebuild's by 3 kB when a resumed
 * rebuild went on from the heads that fenced it off and the read-models replay held a
 * partition at a gap while it read the others (860.7 kB); to 868 kB when it read every generation of the keyed topics
 * (core/generation-log.ts, adapters/kafka/generation-log.ts): 862.8 kB. The command handler's by 10 kB when
 * it could park one aggregate (policy `park`: command/parking.ts and its DynamoDB store): 775.0 kB.
 * The command handler's to 786 kB when it sealed a drained generation, asked every events
 * generation whether a new table may start empty, and read a re-sent outbox's trace back: 782.8 kB.
 * The rebuild's by 4 kB when checkpoints carried the control item's facts as stamps
 * (heads/stamp.ts, command/control-gate.ts): 868.8 kB, the command handler 784.7 kB.
 * The rebuild's budget of 872 kB also held when the event reader checked the usual envelope by hand before zod
 * (core/envelope.ts): 869.2 kB.
 * The rebuild's to 880 kB when it caught up projection versions and published the catch-up's
 * metrics (rebuild/projection-version.ts, handlers/rebuild.ts): 874.1 kB on its own branch.
 * Merged, the command handler came to 786.2 kB (budget 790 kB) and the event handler, with projection
 * versions and the quick envelope check, to 755.8 kB (budget 760 kB).
 * The event handler's to 765 kB when it read its own topic back for the census another function
 * held unwritten (event/census-writes.ts, adapters/kafka/topic-log.ts): 760.5 kB.
 * With the event side's policy park (event/parking.ts) the event handler came to 770.7 kB (budget
 * 775 kB); with the version switch's resumed drop and the read-models replay reading past the
 * trigger for missing versions, the rebuild to 883.1 kB (budget 890 kB). The rebuild's to 895 kB
 * when the read-models replay kept the event side's parks (event/parking.ts and its DynamoDB store): 890.7 kB.
 * The command API's to 765 kB when heads kept their outbox in compact form
 * (adapters/dynamodb/outbox-body.ts; the API bundles the heads table, which writes heads): 762.1 kB.
 * With that codec, parks kept per life of the commands topic and the generation gate reading the
 * commands trigger's positions (command/generation-gate.ts), the command handler to 800 kB (793.2 kB);
 * the rebuild, which bundles them too, to 905 kB (895.6 kB).
 * The event handler's to 780 kB when strikes were keyed per life of the topic, the park store was
 * split and the publishers learned to forward to the newest generation: 775.3 kB.
 * The rebuild's to 912 kB when it folded a log in memory in pages, kept each head's dedupe window
 * with a margin for clocks that differ, and held the event side while it rebuilt one projection
 * (rebuild/held-replay.ts): 905.2 kB.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, bytesByPackage, deployedEntries, type Bundle } from '../../infra/bundling.ts';

/** Largest bundle each deployed function may have, in bytes (kB = 1,000 bytes). */
const BUDGET: Readonly<Record<string, number>> = {
  commandHandler: 800_000,
  eventHandler: 780_000,
  snapshotRebuild: 912_000,
  commandApi: 765_000,
  topicsProvider: 615_000,
};

const outdir = mkdtempSync(join(tmpdir(), 'kafka-aggregates-bundles-'));
const bundles = new Map<string, Bundle>();

beforeAll(async () => {
  for (const [key, entry] of Object.entries(deployedEntries)) bundles.set(key, await buildBundle(entry, join(outdir, key)));
}, 120_000);
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

const bundle = (key: string): Bundle => {
  const found = bundles.get(key);
  if (found === undefined) throw new Error(`no bundle for ${key}`);
  return found;
};

describe('function bundles', () => {
  it('has a budget for every deployed function and no other', () => {
    expect(Object.keys(BUDGET).sort()).toEqual(Object.keys(deployedEntries).sort());
  });

  it.each(Object.keys(BUDGET))('keeps %s within its budget', (key) => {
    const { bytes } = bundle(key);
    const largest = bytesByPackage(bundle(key))
      .slice(0, 8)
      .map(([name, size]) => `${name} ${(size / 1000).toFixed(1)} kB`)
      .join(', ');
    expect(bytes, `${key} is ${(bytes / 1000).toFixed(1)} kB, budget ${BUDGET[key]! / 1000} kB; largest: ${largest}`).toBeLessThanOrEqual(
      BUDGET[key]!,
    );
  });

  it('bundles no second SigV4 stack: no MSK signer library, STS client or credential-providers package', () => {
    for (const [key] of bundles) {
      const packages = bytesByPackage(bundle(key)).map(([name]) => name);
      expect(packages, key).not.toContain('aws-msk-iam-sasl-signer-js');
      expect(packages, key).not.toContain('@aws-sdk/client-sts');
      expect(packages, key).not.toContain('@aws-sdk/credential-providers');
      expect(packages, key).not.toContain('@aws-crypto/sha256-js');
    }
  });
});
