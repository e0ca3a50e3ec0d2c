import { describe, expect, it } from 'vitest';
import { EMPTY_PAYLOAD_SHA256, encodeS3Key, signRequest } from './sigv4.js';

describe('signRequest', () => {
  it('reproduces the GetObject example of the AWS Signature Version 4 documentation', () => {
    const headers = signRequest({
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      headers: { Range: 'bytes=0-9' },
      payloadHash: EMPTY_PAYLOAD_SHA256,
      region: 'us-east-1',
      accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
      secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      date: new Date('2013-05-24T00:00:00Z'),
    });
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
    );
    expect(headers).toMatchObject({
      host: 'examplebucket.s3.amazonaws.com',
      'x-amz-date': '20130524T000000Z',
      range: 'bytes=0-9',
    });
  });

  it('encodes keys segment by segment', () => {
    expect(encodeS3Key('org/a b+c(1)*')).toBe('org/a%20b%2Bc%281%29%2A');
  });
});
