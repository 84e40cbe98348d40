/** The naive baseline (bench/baseline.ts) as a handler module for the emulated trigger, with counted DynamoDB requests. */
import { aggregates } from '../functions/domain/index.ts';
import { createBaselineProcessor } from './baseline.ts';
import { benchHandler } from './handler-kit.ts';

const kit = benchHandler('baseline', ({ doc, publisher, targets }) =>
  createBaselineProcessor({ aggregates, doc, tableName: targets.tableName, publisher }),
);

/** See handler-kit.ts. */
export const { configure, handler, shutdown, stats } = kit;
