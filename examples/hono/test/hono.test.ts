import { describeExampleApp } from '@idt/testing';
import { startHonoApp } from '../src/app.js';

describeExampleApp('Hono on @hono/node-server with idt.fetch under /idt', startHonoApp);
