# One schema for every benchmark shape: an optional key and a list of opaque
# byte fields. Keep in step with record.proto and record.fbs.
@0xb383a3dae6a9f555;

struct Record {
  key @0 :Data;
  fields @1 :List(Data);
}
