# The SDE's Python BF Runtime client as a package (bfrt_grpc), as the SDE
# installs it: client.py and info_parse.py beside it are the SDE's, the
# generated bfruntime_pb2*.py are made by the test (see SOURCE.md).
