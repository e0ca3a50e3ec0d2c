import { describe, expect, it } from 'vitest';
import { closeMessage, completion, handshakeError, invocation, PING, parseClientMessage, splitRecords } from './protocol.js';

describe('SignalR JSON hub protocol', () => {
  it('splits records on the record separator and keeps an unfinished one', () => {
    expect(splitRecords('{"a":1}\u001e{"b":2}\u001e{"c"')).toEqual({ records: ['{"a":1}', '{"b":2}'], rest: '{"c"' });
    expect(splitRecords('{}\u001e')).toEqual({ records: ['{}'], rest: '' });
    expect(splitRecords('')).toEqual({ records: [], rest: '' });
  });

  it('accepts only the json protocol, version 1, at the handshake', () => {
    expect(handshakeError('{"protocol":"json","version":1}')).toBeNull();
    expect(handshakeError('{"protocol":"json","version":2}')).toMatch(/version 2/);
    expect(handshakeError('{"protocol":"messagepack","version":1}')).toMatch(/messagepack/);
    expect(handshakeError('[]')).toMatch(/object/);
    expect(handshakeError('{')).toMatch(/JSON/);
  });

  it('parses the client messages of protocol version 1 and refuses the rest', () => {
    expect(parseClientMessage('{"type":1,"invocationId":"1","target":"JoinGroup","arguments":["user:a"]}')).toEqual({
      message: { type: 1, invocationId: '1', target: 'JoinGroup', arguments: ['user:a'] },
    });
    expect(parseClientMessage('{"type":1,"target":"JoinGroup"}')).toEqual({
      message: { type: 1, target: 'JoinGroup', arguments: [] },
    });
    expect(parseClientMessage('{"type":6}')).toEqual({ message: { type: 6 } });
    expect(parseClientMessage('{"type":7,"error":"bye"}')).toEqual({ message: { type: 7, error: 'bye' } });
    expect(parseClientMessage('{"type":5,"invocationId":"9"}')).toEqual({ message: { type: 5, invocationId: '9' } });
    for (const bad of [
      '{"type":1}',
      '{"type":1,"target":"x","arguments":{}}',
      '{"type":8}',
      '{"type":"1"}',
      '{"type":1,"target":"x","invocationId":3}',
      '{"type":4,"target":"x"}',
      'null',
      '1',
      '{',
    ]) {
      expect(parseClientMessage(bad)).toHaveProperty('error');
    }
  });

  it('frames server messages with the separator', () => {
    expect(invocation('ReceiveNotification', [{ a: 1 }])).toBe(
      '{"type":1,"target":"ReceiveNotification","arguments":[{"a":1}]}\u001e',
    );
    expect(completion('4')).toBe('{"type":3,"invocationId":"4"}\u001e');
    expect(completion('4', 'no')).toBe('{"type":3,"invocationId":"4","error":"no"}\u001e');
    expect(PING).toBe('{"type":6}\u001e');
    expect(closeMessage()).toBe('{"type":7}\u001e');
    expect(closeMessage('expired', true)).toBe('{"type":7,"error":"expired","allowReconnect":true}\u001e');
  });
});
