import { describeExampleApp } from '@idt/testing';
import { startFastifyApp } from '../src/app.js';

describeExampleApp('Fastify 5 with idt in a plugin under /idt', startFastifyApp);
