"""What a write goes through before it is stored: decoding, defaults, admission, validation, fields, managed fields,
server-side apply, patches, quantities, delete options."""
