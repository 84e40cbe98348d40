/** CDK entry point (`cdk.json`: `npx tsx infra/app.ts`); the CLI synthesizes on exit. */
import { defineApp } from './define-app.ts';

defineApp();
