/** `npm run openapi`: writes docs/openapi.json and docs/openapi.local.json from code (local/openapi.ts). */
import { writeOpenApi } from './openapi.ts';

writeOpenApi();
