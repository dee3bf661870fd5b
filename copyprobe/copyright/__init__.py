"""The copyright-compliance benchmark: do vision-language models redistribute copyrighted text shown to them as an image, with and without a copyright notice?"""
