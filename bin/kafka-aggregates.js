#!/usr/bin/env node
// The `kafka-aggregates` command: registers tsx so that Node loads the TypeScript sources as they are.
import { register } from 'tsx/esm/api';

register();
await import('../local/cli.ts');
