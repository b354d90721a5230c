/** Client-chosen session ids: 1 to 128 characters of letters, digits and `._:-`. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const SESSION_ID_RULE = '1-128 characters of A-Z a-z 0-9 . _ : -';
